#include "llmbench/base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "llmbench/base/error.h"

namespace llmbench::log {
namespace {

// Logs go to stderr so that stdout stays clean for --json and --format output.
spdlog::logger& logger() {
  static auto instance = [] {
    auto l = spdlog::stderr_color_mt("llmbench");
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *instance;
}

spdlog::level::level_enum to_spd(Level l) {
  switch (l) {
    case Level::trace: return spdlog::level::trace;
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
    case Level::off: return spdlog::level::off;
  }
  return spdlog::level::info;
}

Level current = Level::info;

}  // namespace

Level parse_level(const std::string& name) {
  if (name == "trace") return Level::trace;
  if (name == "debug") return Level::debug;
  if (name == "info") return Level::info;
  if (name == "warn" || name == "warning") return Level::warn;
  if (name == "error") return Level::error;
  if (name == "off") return Level::off;
  throw UsageError(cat("unknown log level '", name, "' (use trace, debug, info, warn, error or off)"));
}

void set_level(Level level) {
  current = level;
  logger().set_level(to_spd(level));
}

Level level() { return current; }

// One line per message, as errors: a quoted value's line breaks are escaped (a label "a\nb").
void write(Level level, const std::string& message) { logger().log(to_spd(level), "{}", one_line(message)); }

}  // namespace llmbench::log
