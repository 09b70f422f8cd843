#include <filesystem>
#include <string>

#include "command.h"

namespace llmbench::cli {
namespace {

std::string& stored() {
  static std::string line;
  return line;
}

// Quoted for a POSIX shell when it holds anything but plain characters.
std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,:/@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "llmbench";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const std::string prev = argv[i - 1];
    // Secrets stay out of results files: the API key, and header values (often credentials).
    if (prev == "--api-key") a = "***";
    else if (a.rfind("--api-key=", 0) == 0) a = "--api-key=***";
    else if (prev == "--header") a = a.substr(0, a.find(':')) + ":***";
    else if (a.rfind("--header=", 0) == 0) a = a.substr(0, a.find(':')) + ":***";
    line += " " + shell_quote(a);
  }
  stored() = line;
}

const std::string& command_line() { return stored(); }

}  // namespace llmbench::cli
