#include "llmbench/model/load_progress.h"

#include <unistd.h>

#include <cstdio>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

namespace llmbench {
namespace {
constexpr double kPeriodSeconds = 1.0;

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

LoadProgress::LoadProgress(std::string what, std::int64_t total_bytes)
    : what_(std::move(what)),
      total_(total_bytes),
      tty_(::isatty(STDERR_FILENO) && log::level() <= log::Level::info),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

LoadProgress::~LoadProgress() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  if (done_ >= total_) log::debug(cat(what_, ": 100 % (", total_ / 1000000, " MB in ", seconds(std::chrono::steady_clock::now() - start_), " s)"));
}

void LoadProgress::advance(std::int64_t bytes) {
  done_ += bytes;
  const auto now = std::chrono::steady_clock::now();
  if (seconds(now - last_) < kPeriodSeconds || done_ >= total_ || total_ <= 0) return;
  last_ = now;
  const int percent = static_cast<int>(100 * done_ / total_);
  if (tty_) {
    std::fprintf(stderr, "\r%s: %d %%", what_.c_str(), percent);
    std::fflush(stderr);
    drawn_ = true;
  } else {
    log::debug(cat(what_, ": ", percent, " %"));
  }
}

}  // namespace llmbench
