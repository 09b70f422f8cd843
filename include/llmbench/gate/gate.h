#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/report/results.h"

namespace llmbench {

// One gated metric: a summary metric (ttft_ms, tpot_ms, e2e_ms, output_tok_s, ...) judged on its
// trimmed median with a bootstrap CI of the ratio, or a memory value (peak_memory,
// peak_allocated_bytes, peak_reserved_bytes, peak_rss_bytes) judged on its single value.
struct GateMetric {
  std::string name;
  double threshold = 0.05;  // relative change that counts, 0.05 = 5 %
};

struct GateConfig {
  // TTFT, TPOT, e2e, output throughput at 5 %, peak memory at 2 %.
  std::vector<GateMetric> metrics = {
      {"ttft_ms", 0.05}, {"tpot_ms", 0.05}, {"e2e_ms", 0.05}, {"output_tok_s", 0.05}, {"peak_memory", 0.02}};
  double max_cv = 0.05;         // above this a change that the CI cannot settle is blamed on noise
  bool allow_missing = false;   // a baseline point absent from the current file is not a regression
  bool allow_env_mismatch = false;
  // `load --search` results: the highest load meeting the goodput target. Regressed when the current
  // search missed at a load at most (1 - t) x the baseline's highest passing one; improved when it met
  // one at least (1 + t) x the baseline's lowest missing one.
  double search_threshold = 0.10;
  // Load points: regressed when the share of failed requests rose by more than this (in points), improved
  // when it fell by more.
  double failed_threshold = 0.05;
};

// Every metric name the gate knows.
const std::vector<std::string>& gate_metric_names();

// YAML: `metrics: {ttft_ms: 5%, peak_memory: 0.02, ...}` (replaces the default list), `max_cv`,
// `allow_missing`, `allow_env_mismatch`, `search_threshold`, `failed_threshold`. Errors name FILE:LINE:COL and the key (UsageError).
GateConfig parse_gate_config(const std::string& text, const std::string& name);
GateConfig load_gate_config(const std::string& path);

enum class Verdict { improved, unchanged, regressed, inconclusive, missing };
const char* to_string(Verdict v);

struct MetricVerdict {
  std::string metric;
  bool higher_is_better = false;
  double threshold = 0;
  double baseline = 0;      // trimmed median (or the memory value)
  double current = 0;
  double ratio = 0;         // current / baseline
  bool has_ci = false;      // memory has no runs, hence no interval
  double ci_lo = 0, ci_hi = 0;  // bootstrap CI95 of median(current) / median(baseline)
  double baseline_cv = 0, current_cv = 0;
  Verdict verdict = Verdict::unchanged;
  std::string reason;       // why, for inconclusive (and the rule that decided otherwise)
};

struct PointVerdict {
  PointParams params;
  std::string name;                      // the point as tables name it ("" = from params)
  Verdict verdict = Verdict::unchanged;  // the worst of its metrics, or missing
  std::string reason;                    // for missing / failed points
  std::vector<MetricVerdict> metrics;
};

struct GateReport {
  std::string baseline_name, current_name;
  std::vector<PointVerdict> points;
  std::vector<std::string> env_differences;  // allowed ones (refused ones throw)
  std::vector<std::string> notes;            // new points, failed baselines, interrupted files, ...
  int regressions = 0;                       // points counted as regressions
  bool passed() const { return regressions == 0; }
  int exit_code() const { return passed() ? 0 : 1; }
};

// Matches points by params and judges every configured metric. Throws UsageError listing the
// differences when the environments differ (GPU, dtype, weights kind) and that is not allowed.
GateReport run_gate(const Results& baseline, const Results& current, const GateConfig& config,
                    const std::string& baseline_name = "baseline", const std::string& current_name = "current");

// A Markdown summary fit for a CI log or a pull-request comment.
std::string gate_markdown(const GateReport& report);
nlohmann::json to_json(const GateReport& report);
// Throws Error("<json path>: <what is wrong>") unless `j` has the shape to_json writes: an object with a boolean
// `passed`, `points` an array of objects with string `name`, `verdict` (one of to_string's) and `reason`, and
// `metrics` an array of objects with string `metric` and `verdict` and numbers (or null) for `baseline`,
// `current` and `ratio`; `notes` and `env_differences`, where present, arrays of strings. (report --gate.)
void check_verdict_json(const nlohmann::json& j);

}  // namespace llmbench
