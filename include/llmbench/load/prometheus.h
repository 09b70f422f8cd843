#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace llmbench {

// One sample of the Prometheus text exposition format: `name{label="value",...} value [timestamp]`.
struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // as written (escapes resolved)
  double value = 0;
};

// A parsed /metrics page. Lines that are neither a comment nor a valid sample are counted, not fatal.
struct PromPage {
  std::map<std::string, std::string> types;  // metric family -> counter | gauge | histogram | summary | untyped
  std::vector<PromSample> samples;
  int bad_lines = 0;
};

// The text format 0.0.4 (and OpenMetrics' `# EOF`): `# TYPE` lines name the families; `# HELP` and other
// comments are skipped; values may be NaN, +Inf, -Inf; a trailing timestamp is ignored.
PromPage parse_prometheus(const std::string& text);

// `name{a="x",b="y"}` with the labels sorted by name, `drop` left out, values escaped as Prometheus does
// (just `name` without labels): one key per series.
std::string series_key(const std::string& name, std::vector<std::pair<std::string, std::string>> labels,
                       const std::string& drop = "");

}  // namespace llmbench
