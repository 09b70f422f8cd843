#pragma once
#include <chrono>
#include <cstdint>
#include <string>

// Progress of a long model load on stderr, about once a second: "drawing random weights: 43 %",
// redrawn in place when stderr is a terminal (and the log level shows info), else as debug log lines
// (-v / --log-level debug). A load that takes under a second prints nothing but the final debug line.
namespace llmbench {

class LoadProgress {
 public:
  LoadProgress(std::string what, std::int64_t total_bytes);
  ~LoadProgress();  // clears the terminal line
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

  void advance(std::int64_t bytes);

 private:
  std::string what_;
  std::int64_t total_ = 0;
  std::int64_t done_ = 0;
  bool tty_ = false;   // in-place line on a terminal
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace llmbench
