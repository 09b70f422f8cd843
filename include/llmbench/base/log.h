#pragma once
#include <string>

// The logging facade. spdlog is used only in log.cpp, so torch translation units (whose bundled fmt
// clashes with the system fmt that spdlog was built with) never see spdlog's headers.
namespace llmbench::log {

enum class Level { trace, debug, info, warn, error, off };

// Parses "trace|debug|info|warn|error|off"; throws UsageError on anything else.
Level parse_level(const std::string& name);
void set_level(Level level);
Level level();
void write(Level level, const std::string& message);

inline void debug(const std::string& m) { write(Level::debug, m); }
inline void info(const std::string& m) { write(Level::info, m); }
inline void warn(const std::string& m) { write(Level::warn, m); }
inline void error(const std::string& m) { write(Level::error, m); }

}  // namespace llmbench::log
