#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace llmbench {

// Concatenates any streamable values into one string: cat("tensor ", name, " has ", n, " dims").
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Every failure inside llmbench is an Error with context (file, tensor, field); main catches it once.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Bad command-line usage or bad user input detected before any work started: exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// The device ran out of memory (or an estimate says it would).
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& message) : Error(message) {}
};

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// A number in a message as a user would write it: 1000000 and 0.001, not 1e+06 (12 significant digits).
std::string shown(double v);

// First line of an exception message (c10::Error carries a backtrace after it).
std::string first_line(const std::string& message);

// llmbench's own messages on one line whatever they quote: a line break or other control character
// in a value (a path, a model name) is written as \n, \r or \xNN instead of cutting the message there, and
// so is a byte that is not part of well-formed UTF-8 (a quoted file's bytes): the line is valid UTF-8.
std::string one_line(const std::string& message);

}  // namespace llmbench
