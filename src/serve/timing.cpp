#include "llmbench/serve/timing.h"

#include <cstdio>

namespace llmbench::serve {

namespace {

struct Stage {
  const char* name;
  double StageTimes::*ms;
};
constexpr Stage kStages[] = {{"http_recv", &StageTimes::http_recv}, {"queue", &StageTimes::queue},
                             {"tokenize", &StageTimes::tokenize},   {"prefill", &StageTimes::prefill},
                             {"decode", &StageTimes::decode},       {"stream", &StageTimes::stream}};

}  // namespace

std::string server_timing_header(const StageTimes& t) {
  std::string out;
  char buf[64];
  for (const Stage& s : kStages) {
    std::snprintf(buf, sizeof buf, "%s%s;dur=%.3f", out.empty() ? "" : ", ", s.name, t.*s.ms);
    out += buf;
  }
  return out;
}

std::string timing_json(const StageTimes& t) {
  std::string out = "{";
  char buf[64];
  for (const Stage& s : kStages) {
    std::snprintf(buf, sizeof buf, "%s\"%s_ms\":%.3f", out.size() > 1 ? "," : "", s.name, t.*s.ms);
    out += buf;
  }
  return out + "}";
}

}  // namespace llmbench::serve
