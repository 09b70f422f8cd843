#include "llmbench/gate/gate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/config/compare_config.h"
#include "llmbench/report/format.h"
#include "llmbench/report/load_result.h"

namespace llmbench {

using nlohmann::json;

namespace {

const std::vector<std::string> kMemoryMetrics = {"peak_memory", "peak_allocated_bytes", "peak_reserved_bytes",
                                                 "peak_rss_bytes"};

bool is_memory(const std::string& m) {
  return std::find(kMemoryMetrics.begin(), kMemoryMetrics.end(), m) != kMemoryMetrics.end();
}

bool higher_is_better(const std::string& m) { return m.size() > 6 && m.compare(m.size() - 6, 6, "_tok_s") == 0; }

double memory_value(const PointResult& p, const std::string& m) {
  if (m == "peak_allocated_bytes") return double(p.memory.peak_allocated_bytes);
  if (m == "peak_reserved_bytes") return double(p.memory.peak_reserved_bytes);
  if (m == "peak_rss_bytes") return double(p.memory.peak_rss_bytes);
  // peak_memory: the allocator peak on CUDA; on the CPU the allocator counters are 0 and RSS stands in.
  return double(p.memory.peak_allocated_bytes > 0 ? p.memory.peak_allocated_bytes : p.memory.peak_rss_bytes);
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

std::string signed_percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (ratio - 1));
  return buf;
}

std::string number(double v) {
  char buf[64];
  if (std::fabs(v) >= 1e6)
    std::snprintf(buf, sizeof buf, "%.4g", v);
  else
    std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Points match on every parameter but `device` (a property of the environment); without the dtype
// (with_dtype false) a point pairs across a dtype change (run_gate).
std::string point_key(const PointParams& p, bool with_dtype) {
  std::ostringstream os;
  os.precision(17);
  os << p.model << '\x1f' << p.label << '\x1f' << p.batch << '\x1f' << p.prompt_len << '\x1f' << p.max_new_tokens
     << '\x1f' << p.temperature << '\x1f' << p.attn << '\x1f' << (with_dtype ? p.dtype : "") << '\x1f' << p.top_k
     << '\x1f' << p.top_p << '\x1f' << p.seed << '\x1f' << p.cuda_graph << '\x1f' << p.fused;
  // Quantized points are other points (left out at the default, so older baselines still match; "" on a load
  // point, whose engine is not known).
  if (!p.weights.empty() && p.weights != "bf16") os << '\x1f' << "weights " << p.weights;
  if (!p.kv_dtype.empty() && p.kv_dtype != "bf16") os << '\x1f' << "kv " << p.kv_dtype;
  // So are other tensor-parallel widths and the scaled-mm prefill (left out at their defaults, as above; a load
  // point's tp is 0, in old files and new alike).
  if (p.tp != 1) os << '\x1f' << "tp " << p.tp;
  if (!p.fp8_gemm.empty() && p.fp8_gemm != "dequant") os << '\x1f' << "fp8_gemm " << p.fp8_gemm;
  return os.str();
}

// Load points also match on their load shape: concurrency is params.batch, the rate and API are not.
std::string point_key(const PointResult& p, bool with_dtype) {
  std::string key = point_key(p.params, with_dtype);
  if (p.load) key += cat('\x1f', "load", '\x1f', p.load->api, '\x1f', p.load->request_rate, '\x1f', p.load->arrival);
  // Older files (neither) still match.
  if (p.load && p.load->range_ratio > 0) key += cat('\x1f', "range ", p.load->range_ratio);
  if (p.load && p.load->max_concurrency > 0) key += cat('\x1f', "cap ", p.load->max_concurrency);
  if (p.load && p.load->prefix_len > 0) key += cat('\x1f', "prefix ", p.load->prefix_len);
  if (p.load && p.load->trace_block_size) key += cat('\x1f', "trace block ", *p.load->trace_block_size);
  if (p.load && !p.load->extra_body.empty()) key += cat('\x1f', "extra ", p.load->extra_body);
  if (p.load && !p.load->stream) key += cat('\x1f', "no-stream");
  if (p.load && p.load->turns > 1) key += cat('\x1f', "turns ", p.load->turns, " delay ", p.load->turn_delay_ms);
  if (p.load && p.load->turns_stddev > 0) key += cat('\x1f', "turns stddev ", p.load->turns_stddev);
  if (p.load && p.load->turn_delay_stddev_ms > 0) key += cat('\x1f', "delay stddev ", p.load->turn_delay_stddev_ms);
  if (p.load && p.load->cancel_rate > 0) key += cat('\x1f', "cancel ", p.load->cancel_rate, " after ", p.load->cancel_delay_ms);
  return key;
}

// A load point cut short by Ctrl-C keeps status ok and says so in load.partial: the gate takes it as interrupted.
std::string status_of(const PointResult& p) { return p.status == "ok" && p.load && p.load->partial ? "interrupted" : p.status; }

// What tells two points of the same printed name apart, as "api: completions → chat, prefix: 0 → 64".
std::string what_differs(const PointResult& b, const PointResult& c) {
  std::vector<std::string> out;
  auto differ = [&](const std::string& what, const auto& x, const auto& y) {
    if (x != y) out.push_back(cat(what, ": ", x, " → ", y));
  };
  auto text = [](const std::string& s) { return s.empty() ? std::string("(none)") : s; };
  differ("model", b.params.model, c.params.model);
  differ("top_k", b.params.top_k, c.params.top_k);
  differ("top_p", b.params.top_p, c.params.top_p);
  differ("seed", b.params.seed, c.params.seed);
  auto on = [](bool v) { return std::string(v ? "on" : "off"); };
  differ("cuda_graph", on(b.params.cuda_graph), on(c.params.cuda_graph));
  differ("fused", on(b.params.fused), on(c.params.fused));
  differ("tp", b.params.tp, c.params.tp);
  differ("fp8_gemm", text(b.params.fp8_gemm), text(c.params.fp8_gemm));
  if (b.load && c.load) {
    const LoadResult &x = *b.load, &y = *c.load;
    differ("api", text(x.api), text(y.api));
    differ("arrival", text(x.arrival), text(y.arrival));
    differ("range_ratio", x.range_ratio, y.range_ratio);
    differ("prefix_len", x.prefix_len, y.prefix_len);
    differ("extra_body", text(x.extra_body), text(y.extra_body));
    differ("turns", x.turns, y.turns);
    differ("turn_delay_ms", x.turn_delay_ms, y.turn_delay_ms);
    differ("turns_stddev", x.turns_stddev, y.turns_stddev);
    differ("turn_delay_stddev_ms", x.turn_delay_stddev_ms, y.turn_delay_stddev_ms);
    differ("cancel_rate", x.cancel_rate, y.cancel_rate);
    differ("cancel_delay_ms", x.cancel_delay_ms, y.cancel_delay_ms);
  }
  std::string all;
  for (const auto& d : out) all += (all.empty() ? "" : ", ") + d;
  return all;
}

// Load points have latency summaries only: no memory, no per-run throughputs.
bool applies(const PointResult& p, const std::string& metric) {
  if (!p.load) return true;
  if (!p.load->stream) return metric == "e2e_ms";  // a whole response has no TTFT, TPOT or ITL
  const auto& m = load_summary_metrics();
  return std::find(m.begin(), m.end(), metric) != m.end();
}

// `load` names what stands for the batch: an open loop's rate, a search's answer ("" = "b<batch>"). Quantized
// weights and an fp8 cache are named (bf16, the default, is not); empty fields (a load point's) leave no gap.
std::string describe(const PointParams& p, const std::string& load = "") {
  std::ostringstream t;
  t << p.temperature;
  std::string out;
  for (const std::string& part : {p.label.empty() ? p.model : p.label, load.empty() ? cat("b", p.batch) : load,
                                  cat("p", p.prompt_len), cat("n", p.max_new_tokens), "t" + t.str(), p.attn, p.dtype,
                                  p.weights == "bf16" || p.weights.empty() ? std::string() : p.weights,
                                  p.kv_dtype == "bf16" || p.kv_dtype.empty() ? std::string() : "kv " + p.kv_dtype})
    if (!part.empty()) out += (out.empty() ? "" : " ") + part;
  return out;
}

// A load point by its load too: "… rate 20.00/s poisson …", "… search max_request_rate …", "… no-stream".
std::string describe(const PointResult& p) {
  if (!p.load) return describe(p.params);
  const LoadResult& l = *p.load;
  std::string load;
  if (l.search) load = l.search->axis == "request_rate" ? "search max_request_rate" : "search max_concurrency";
  else if (is_trace_replay(l)) load = l.request_rate > 0 ? cat(l.arrival, " replay (", number(l.request_rate), "/s)") : l.arrival + " replay";
  else if (l.request_rate > 0) load = cat("rate ", number(l.request_rate), "/s ", l.arrival);
  std::string out = describe(p.params, load);
  if (l.search && l.search->axis == "request_rate") out += " " + l.arrival;
  if (l.max_concurrency > 0) out += cat(" cap ", l.max_concurrency);
  if (!l.stream) out += " no-stream";
  if (l.cancel_rate > 0) out += cat(" cancel ", number(l.cancel_rate), "% after ", number(l.cancel_delay_ms), " ms");
  if (l.turns > 1)
    out += cat(" ", l.turns, l.turns_stddev > 0 ? cat("±", number(l.turns_stddev)) : "", " turns",
               l.turn_delay_ms > 0 || l.turn_delay_stddev_ms > 0
                   ? cat(" think ", number(l.turn_delay_ms),
                         l.turn_delay_stddev_ms > 0 ? cat("±", number(l.turn_delay_stddev_ms)) : "", " ms")
                   : "");
  return out;
}

// The file's points by their full key; two points with the same parameters make the match ambiguous.
std::map<std::string, const PointResult*> points_by_key(const Results& r, const std::string& name) {
  std::map<std::string, const PointResult*> out;
  for (const auto& p : r.points)
    if (!out.emplace(point_key(p, true), &p).second)
      throw UsageError(cat(name, ": two points with the same parameters (", describe(p),
                           "): the gate cannot tell which to compare"));
  return out;
}

template <class F>
std::set<std::string> collect(const Results& r, F f) {
  std::set<std::string> out;
  for (const auto& p : r.points) out.insert(f(p));
  return out;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + (x.empty() ? std::string("(none)") : x);
  return out.empty() ? "(none)" : out;
}

std::string gpu_names(const EnvInfo& env) {
  std::string out;
  for (const auto& g : env.gpus) out += (out.empty() ? "" : " + ") + g.name;
  return out.empty() ? "no GPU" : out;
}

// Which devices the points ran on, as "cpu" / "cuda".
std::string device_kind(const PointParams& p) { return p.device.rfind("cuda", 0) == 0 ? "cuda" : p.device; }

MetricVerdict judge_runs(const PointResult& b, const PointResult& c, const GateMetric& gm, double max_cv) {
  MetricVerdict v;
  v.metric = gm.name;
  v.threshold = gm.threshold;
  v.higher_is_better = higher_is_better(gm.name);
  const std::vector<double> bv = metric_values(b, gm.name), cv = metric_values(c, gm.name);
  v.baseline = v.current = v.ratio = std::nan("");  // none yet: null in JSON, "-" in markdown
  if (!bv.empty()) v.baseline = summarize(bv, b.trim).trimmed_median;
  if (!cv.empty()) v.current = summarize(cv, c.trim).trimmed_median;
  if (bv.empty() || cv.empty()) {
    v.verdict = Verdict::inconclusive;
    v.reason = cat("no ", gm.name, " values in the ", bv.empty() ? "baseline" : "current", " runs");
    return v;
  }
  const Summary bs = summarize(bv, b.trim), cs = summarize(cv, c.trim);
  v.baseline_cv = bs.cv;
  v.current_cv = cs.cv;
  if (bv.size() < 2 || cv.size() < 2) {
    // One value has no spread: neither its CV nor a bootstrap interval says anything about the noise.
    v.verdict = Verdict::inconclusive;
    v.reason = cat("one ", gm.name, " value in the ", bv.size() < 2 ? "baseline" : "current",
                   ": no noise estimate (", b.load ? "--num-requests" : "--runs", " 2 or more)");
    if (v.baseline != 0) v.ratio = v.current / v.baseline;
    return v;
  }
  if (v.baseline == 0) {
    v.verdict = Verdict::inconclusive;
    v.reason = "baseline value is 0";
    return v;
  }
  v.ratio = v.current / v.baseline;
  const Interval ci = bootstrap_ratio_of_medians_ci95(cv, bv);
  v.has_ci = true;
  v.ci_lo = ci.lo;
  v.ci_hi = ci.hi;
  const double up = 1 + gm.threshold, down = 1 - gm.threshold;
  // Worse means a larger ratio for times, a smaller one for throughputs.
  const bool worse_clear = v.higher_is_better ? ci.hi < down : ci.lo > up;
  const bool better_clear = v.higher_is_better ? ci.lo > up : ci.hi < down;
  const bool beyond = v.ratio > up || v.ratio < down;
  const bool ci_leaves_band = ci.lo < down || ci.hi > up;
  const double noise = std::max(bs.cv, cs.cv);
  if (worse_clear) {
    v.verdict = Verdict::regressed;
    v.reason = cat("change ", signed_percent(v.ratio), " and its CI95 are beyond ", percent(gm.threshold));
  } else if (better_clear) {
    v.verdict = Verdict::improved;
    v.reason = cat("change ", signed_percent(v.ratio), " and its CI95 are beyond ", percent(gm.threshold));
  } else if (beyond || (ci_leaves_band && noise > max_cv)) {
    v.verdict = Verdict::inconclusive;
    if (noise > max_cv)
      v.reason = cat("CV too high (", percent(noise), " in the ", bs.cv >= cs.cv ? "baseline" : "current",
                     ", limit ", percent(max_cv), "): the CI95 of the ratio [", number(ci.lo), ", ", number(ci.hi),
                     "] spans the ", percent(gm.threshold), " threshold");
    else
      v.reason = cat("change ", signed_percent(v.ratio), " is beyond ", percent(gm.threshold),
                     " but the CI95 of the ratio [", number(ci.lo), ", ", number(ci.hi), "] overlaps it");
  } else {
    v.verdict = Verdict::unchanged;
    v.reason = cat("within ", percent(gm.threshold));
  }
  return v;
}

MetricVerdict judge_memory(const PointResult& b, const PointResult& c, const GateMetric& gm) {
  MetricVerdict v;
  v.metric = gm.name;
  v.threshold = gm.threshold;
  v.baseline = memory_value(b, gm.name);
  v.current = memory_value(c, gm.name);
  if (v.baseline == 0 || v.current == 0) {
    v.verdict = Verdict::inconclusive;
    v.reason = cat("not measured in the ", v.baseline == 0 ? "baseline" : "current", " file");
    if (v.baseline == 0) v.baseline = std::nan("");  // null in JSON, "-" in markdown
    if (v.current == 0) v.current = std::nan("");
    v.ratio = std::nan("");
    return v;
  }
  v.ratio = v.current / v.baseline;
  // One value per point: memory is deterministic enough that the threshold alone decides.
  if (v.ratio > 1 + gm.threshold) v.verdict = Verdict::regressed;
  else if (v.ratio < 1 - gm.threshold) v.verdict = Verdict::improved;
  else v.verdict = Verdict::unchanged;
  v.reason = v.verdict == Verdict::unchanged ? cat("within ", percent(gm.threshold))
                                              : cat("change ", signed_percent(v.ratio), " beyond ", percent(gm.threshold));
  return v;
}

// A load point's failed requests: a share that rose by more than `threshold` (in points) is a regression
// whatever the latencies of the requests that did complete say.
MetricVerdict judge_failures(const LoadResult& b, const LoadResult& c, double threshold) {
  MetricVerdict v;
  v.metric = "failed_fraction";
  v.threshold = threshold;
  const int b_total = b.completed + b.failed, c_total = c.completed + c.failed;
  v.baseline = b_total > 0 ? double(b.failed) / b_total : 0;
  v.current = c_total > 0 ? double(c.failed) / c_total : 0;
  v.ratio = std::nan("");  // a share of 0 has no ratio: the change is in points
  const double change = v.current - v.baseline;
  v.verdict = change > threshold    ? Verdict::regressed
              : change < -threshold ? Verdict::improved
                                    : Verdict::unchanged;
  v.reason = cat("failed requests ", b.failed, " of ", b_total, " (", percent(v.baseline), ") -> ", c.failed, " of ", c_total,
                 " (", percent(v.current), ")", v.verdict == Verdict::unchanged ? ", within " : ", beyond ",
                 percent(threshold), " points");
  return v;
}

int severity(Verdict v) {
  switch (v) {
    case Verdict::missing: return 4;
    case Verdict::regressed: return 3;
    case Verdict::inconclusive: return 2;
    case Verdict::improved: return 1;
    default: return 0;
  }
}

}  // namespace

const std::vector<std::string>& gate_metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = summary_metrics();
    n.insert(n.end(), kMemoryMetrics.begin(), kMemoryMetrics.end());
    return n;
  }();
  return names;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::improved: return "improved";
    case Verdict::unchanged: return "unchanged";
    case Verdict::regressed: return "regressed";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::missing: return "missing";
  }
  return "?";
}

// ---------------------------------------------------------------- config

namespace {

[[noreturn]] void config_fail(const std::string& file, const YAML::Node& at, const std::string& path,
                              const std::string& message) {
  const YAML::Mark m = at.Mark();
  throw UsageError(cat(m.is_null() ? file : cat(file, ":", m.line + 1, ":", m.column + 1), ": ", path.empty() ? "" : path + ": ",
                       message));
}

// 0.05 or "5%".
double fraction(const std::string& file, const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) config_fail(file, n, path, "expected a fraction (0.05) or a percentage (5%)");
  std::string s = n.Scalar();
  const bool pct = !s.empty() && s.back() == '%';
  if (pct) s.pop_back();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= 0))
    config_fail(file, n, path, cat("expected a fraction (0.05) or a percentage (5%), got '", n.Scalar(), "'"));
  if (!pct && v > 1)  // `ttft_ms: 5` reads as 5 % but would be 500 %
    config_fail(file, n, path, cat("'", n.Scalar(), "' is ambiguous: write ", n.Scalar(), "% (a percentage) or a fraction up to 1"));
  return pct ? v / 100 : v;
}

bool boolean(const std::string& file, const YAML::Node& n, const std::string& path) {
  try {
    if (n.IsScalar()) return n.as<bool>();
  } catch (const YAML::Exception&) {
  }
  config_fail(file, n, path, "expected true or false");
}

}  // namespace

GateConfig parse_gate_config(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    require_one_yaml_document(text, name);
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UsageError(cat(name, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg));
  }
  GateConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) config_fail(name, root, "", "expected a mapping at the top level");
  const std::vector<std::string> top = {"metrics", "max_cv", "allow_missing", "allow_env_mismatch", "search_threshold",
                                        "failed_threshold"};
  std::set<std::string> seen;  // yaml-cpp keeps duplicate keys; each would silently override or add a row
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YAML::Node v = it->second;
    if (!seen.insert(key).second) config_fail(name, it->first, key, "duplicate key");
    if (key == "metrics") {
      if (!v.IsMap() || v.size() == 0)
        config_fail(name, v, key, "expected a non-empty mapping of metric: threshold (e.g. ttft_ms: 5%)");
      c.metrics.clear();
      for (auto m = v.begin(); m != v.end(); ++m) {
        const std::string metric = m->first.Scalar();
        for (const auto& earlier : c.metrics)
          if (earlier.name == metric) config_fail(name, m->first, key + "." + metric, "duplicate key");
        const auto& known = gate_metric_names();
        if (std::find(known.begin(), known.end(), metric) == known.end()) {
          const std::string best = closest_key(metric, known);
          config_fail(name, m->first, key,
                      best.empty() ? cat("unknown metric '", metric, "'")
                                   : cat("unknown metric '", metric, "' (did you mean '", best, "'?)"));
        }
        c.metrics.push_back({metric, fraction(name, m->second, key + "." + metric)});
      }
    } else if (key == "max_cv") {
      c.max_cv = fraction(name, v, key);
    } else if (key == "allow_missing") {
      c.allow_missing = boolean(name, v, key);
    } else if (key == "allow_env_mismatch") {
      c.allow_env_mismatch = boolean(name, v, key);
    } else if (key == "search_threshold") {
      c.search_threshold = fraction(name, v, key);
    } else if (key == "failed_threshold") {
      c.failed_threshold = fraction(name, v, key);
    } else {
      const std::string best = closest_key(key, top);
      config_fail(name, it->first, "",
                  best.empty() ? cat("unknown key '", key, "'") : cat("unknown key '", key, "' (did you mean '", best, "'?)"));
    }
  }
  return c;
}

GateConfig load_gate_config(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return parse_gate_config(text, path);
}

// ---------------------------------------------------------------- the gate

namespace {

bool is_probe(const PointResult& p) { return p.load && p.load->search.has_value(); }

// A file's `load --search`, per label and search shape: its probes' highest passing and lowest missing load.
struct SearchOutcome {
  const PointResult* any = nullptr;  // a probe, for its parameters
  std::optional<double> best, lowest_miss;
};

std::map<std::string, SearchOutcome> searches(const Results& r) {
  std::map<std::string, SearchOutcome> out;
  for (const auto& p : r.points) {
    // A probe whose every request failed missed (status failed); an interrupted one neither met nor missed.
    if (!is_probe(p) || p.load->partial || (p.status != "ok" && p.status != "failed")) continue;
    const LoadResult& l = *p.load;
    const bool rate = l.search->axis == "request_rate";
    // The shape: the point's key without its load (rate or concurrency), plus the objective.
    PointResult shape;
    shape.params = p.params;
    shape.params.batch = 0;
    LoadResult bare;  // the load's shape without its requests
    bare.api = l.api;
    bare.arrival = l.arrival;
    bare.range_ratio = l.range_ratio;
    bare.max_concurrency = l.max_concurrency;
    bare.prefix_len = l.prefix_len;
    bare.extra_body = l.extra_body;
    bare.stream = l.stream;
    shape.load = bare;
    std::string key = cat(point_key(shape, true), '\x1f', l.search->axis, '\x1f', l.search->target, '\x1f',
                          l.slo.ttft_ms.value_or(0), '\x1f', l.slo.tpot_ms.value_or(0), '\x1f', l.slo.e2e_ms.value_or(0));
    SearchOutcome& o = out[key];
    o.any = &p;
    const double v = rate ? l.request_rate : l.concurrency;
    if (l.search->passed && (!o.best || v > *o.best)) o.best = v;
    if (!l.search->passed && (!o.lowest_miss || v < *o.lowest_miss)) o.lowest_miss = v;
  }
  return out;
}

// What tells two searches of the same printed name apart: their objective (SLO, goodput target), then their shape.
std::string search_differs(const PointResult& b, const PointResult& c) {
  std::string out;
  const LoadResult &x = *b.load, &y = *c.load;
  const std::string xs = slo_text(x.slo), ys = slo_text(y.slo);
  if (xs != ys) out = cat("slo: ", xs.empty() ? "(none)" : xs, " → ", ys.empty() ? "(none)" : ys);
  if (x.search->target != y.search->target)
    out += cat(out.empty() ? "" : ", ", "goodput target: ", x.search->target, " → ", y.search->target);
  const std::string shape = what_differs(b, c);
  if (!shape.empty()) out += (out.empty() ? "" : ", ") + shape;
  return out;
}

PointVerdict judge_search(const SearchOutcome& b, const SearchOutcome* c, const GateConfig& config) {
  PointVerdict pv;
  pv.params = b.any->params;
  pv.name = describe(*b.any);
  const bool rate = b.any->load->search->axis == "request_rate";
  pv.params.batch = rate ? 0 : static_cast<int>(b.best.value_or(0));  // the baseline's answer, not a probe's
  const std::string what = rate ? "max_request_rate" : "max_concurrency";
  if (!c) {
    pv.verdict = Verdict::missing;
    pv.reason = "no such --search in the current file";
    return pv;
  }
  MetricVerdict mv;
  mv.metric = what;
  mv.higher_is_better = true;
  mv.threshold = config.search_threshold;
  mv.baseline = b.best.value_or(0);
  mv.current = c->best.value_or(0);
  mv.ratio = mv.baseline > 0 ? mv.current / mv.baseline : std::nan("");
  const double t = config.search_threshold;
  auto show = [](std::optional<double> v) { return v ? number(*v) : std::string("none"); };
  const std::string brackets = cat("highest passing ", show(b.best), " -> ", show(c->best), ", lowest missing ",
                                   show(b.lowest_miss), " -> ", show(c->lowest_miss));
  // The most a search's answer can be: below its lowest miss; for whole concurrencies, one less.
  const double step = rate ? 0 : 1;
  // (Plain doubles with a flag, not optionals: GCC 12 takes an optional's value read under its check for uninitialized.)
  const bool b_bounded = b.lowest_miss.has_value(), c_bounded = c->lowest_miss.has_value();
  const double b_upper = b.lowest_miss.value_or(0) - step, c_upper = c->lowest_miss.value_or(0) - step;
  if (b.best && c_bounded && c_upper <= *b.best * (1 - t)) {
    mv.verdict = Verdict::regressed;
    mv.reason = cat("the most the current can sustain, ", number(c_upper), ", is ", percent(t), " or more below the ",
                    number(*b.best), " the baseline met (", brackets, ")");
  } else if (b.best && !c->best) {
    mv.verdict = Verdict::regressed;
    mv.reason = cat("no load met the goodput target (", brackets, ")");
  } else if (c->best && b_bounded && *c->best >= b_upper * (1 + t)) {
    mv.verdict = Verdict::improved;
    mv.reason = cat("the current met ", number(*c->best), ", ", percent(t), " or more above the most the baseline could sustain, ",
                    number(b_upper), " (", brackets, ")");
  } else {
    mv.verdict = Verdict::unchanged;
    mv.reason = cat("within the search's resolution and ", percent(t), " (", brackets, ")");
  }
  pv.verdict = mv.verdict;
  pv.metrics.push_back(mv);
  return pv;
}

}  // namespace

GateReport run_gate(const Results& baseline, const Results& current, const GateConfig& config,
                    const std::string& baseline_name, const std::string& current_name) {
  GateReport report;
  report.baseline_name = baseline_name;
  report.current_name = current_name;

  std::vector<std::string> differences;
  auto differ = [&](const std::string& what, const std::string& b, const std::string& c) {
    if (b != c) differences.push_back(cat(what, ": ", b, " (baseline) vs ", c, " (current)"));
  };
  if (baseline.points.empty())
    throw UsageError(cat(baseline_name, ": the baseline has no points, nothing to gate against",
                         baseline.interrupted ? " (its run was interrupted before the first point finished)" : ""));
  differ("GPU", gpu_names(baseline.env), gpu_names(current.env));
  // What the points ran with, where both files have points (a current file without any, e.g. interrupted before
  // its first point, fails below with every baseline point missing).
  const auto b_dtypes = collect(baseline, [](const PointResult& p) { return p.params.dtype; });
  const auto c_dtypes = collect(current, [](const PointResult& p) { return p.params.dtype; });
  if (!current.points.empty()) {
    differ("device", join(collect(baseline, [](const PointResult& p) { return device_kind(p.params); })),
           join(collect(current, [](const PointResult& p) { return device_kind(p.params); })));
    differ("dtype", join(b_dtypes), join(c_dtypes));
    differ("weights", join(collect(baseline, [](const PointResult& p) { return p.weights; })),
           join(collect(current, [](const PointResult& p) { return p.weights; })));
  }
  if (!differences.empty()) {
    if (!config.allow_env_mismatch) {
      std::string all;
      for (const auto& d : differences) all += (all.empty() ? "" : "; ") + d;
      throw UsageError(cat("environments differ: ", all, " (pass --allow-env-mismatch to compare anyway)"));
    }
    report.env_differences = differences;
  }
  if (baseline.interrupted) report.notes.push_back("the baseline file is from an interrupted run");
  if (current.interrupted) report.notes.push_back("the current file is from an interrupted run");

  const std::map<std::string, const PointResult*> current_by_key = points_by_key(current, current_name);
  points_by_key(baseline, baseline_name);  // a baseline point given twice is refused as well
  std::set<const PointResult*> matched;
  std::set<std::string> not_for_load;  // configured metrics a load point does not have

  // `load --search` probes sit at loads of their own choosing: they are judged as searches, not points.
  const auto b_searches = searches(baseline), c_searches = searches(current);
  for (const auto& [key, b] : b_searches) {
    if (!b.best && !b.lowest_miss) continue;
    auto it = c_searches.find(key);
    PointVerdict pv = judge_search(b, it == c_searches.end() ? nullptr : &it->second, config);
    if (pv.verdict == Verdict::missing) {
      for (const auto& [ckey, c] : c_searches)
        if (!b_searches.count(ckey) && describe(*c.any) == pv.name && !search_differs(*b.any, *c.any).empty())
          pv.reason += cat("; the current --search of that name differs in ", search_differs(*b.any, *c.any));
      if (config.allow_missing) pv.reason += " (allowed)";
      else ++report.regressions;
    } else if (pv.verdict == Verdict::regressed) {
      ++report.regressions;
    }
    report.points.push_back(pv);
  }
  for (const auto& [key, c] : c_searches) {
    if (b_searches.count(key)) continue;
    std::string note = cat(describe(*c.any), ": new --search, not in the baseline");
    for (const auto& [bkey, b] : b_searches)
      if (!c_searches.count(bkey) && describe(*b.any) == describe(*c.any) && !search_differs(*b.any, *c.any).empty())
        note += cat(" (the baseline --search of that name differs in ", search_differs(*b.any, *c.any), ")");
    report.notes.push_back(note);
  }

  for (const auto& b : baseline.points) {
    if (is_probe(b)) continue;
    PointVerdict pv;
    pv.params = b.params;
    pv.name = describe(b);
    const PointResult* found = nullptr;
    if (auto it = current_by_key.find(point_key(b, true)); it != current_by_key.end()) {
      found = it->second;
    } else if (!c_dtypes.count(b.params.dtype)) {
      // The dtype changed (allowed above): the one current point equal but for a dtype the baseline lacks.
      for (const auto& c : current.points)
        if (!b_dtypes.count(c.params.dtype) && point_key(c, false) == point_key(b, false)) {
          found = found ? nullptr : &c;
          if (!found) break;  // two candidates: no match
        }
    }
    if (found) matched.insert(found);
    const bool no_runs = found && found->status == "ok" && !found->load && found->runs.empty();
    if (status_of(b) != "ok" || (!b.load && b.runs.empty())) {
      report.notes.push_back(cat(describe(b), ": not gated, the baseline point ",
                                 b.status == "ok" && !b.load ? "has no runs" : status_of(b), b.error.empty() ? "" : ": " + b.error));
      continue;
    }
    if (!found || status_of(*found) != "ok" || no_runs) {
      pv.verdict = Verdict::missing;
      pv.reason = !found  ? std::string("no such point in the current file")
                  : no_runs ? std::string("the current point has no runs")
                            : cat("the current point ", status_of(*found), found->error.empty() ? "" : ": " + found->error);
      // A current point of the same name that did not match: say what sets it apart.
      for (const auto& c : current.points)
        if (!found && !is_probe(c) && describe(c) == pv.name && !what_differs(b, c).empty())
          pv.reason += cat("; the current point of that name differs in ", what_differs(b, c));
      if (config.allow_missing) pv.reason += " (allowed)";
      else ++report.regressions;
      report.points.push_back(pv);
      continue;
    }
    const PointResult& c = *found;
    if (b.load && c.load) {
      MetricVerdict mv = judge_failures(*b.load, *c.load, config.failed_threshold);
      pv.verdict = mv.verdict;
      pv.metrics.push_back(mv);
    }
    for (const auto& gm : config.metrics) {
      if (!applies(b, gm.name)) {
        not_for_load.insert(gm.name);
        continue;
      }
      MetricVerdict mv = is_memory(gm.name) ? judge_memory(b, c, gm) : judge_runs(b, c, gm, config.max_cv);
      if (severity(mv.verdict) > severity(pv.verdict)) pv.verdict = mv.verdict;
      pv.metrics.push_back(mv);
    }
    if (pv.verdict == Verdict::regressed) ++report.regressions;
    report.points.push_back(pv);
  }
  if (!not_for_load.empty()) {
    std::string names;
    for (const auto& m : not_for_load) names += (names.empty() ? "" : ", ") + m;
    report.notes.push_back(cat("load points have no ", names, " (per-run throughputs, memory; a --no-stream point has e2e_ms "
                               "only): not judged on them"));
  }
  for (const auto& p : current.points) {
    if (matched.count(&p) || is_probe(p)) continue;
    std::string note = cat(describe(p), ": new point, not in the baseline");
    for (const auto& b : baseline.points)
      if (!is_probe(b) && describe(b) == describe(p) && !what_differs(b, p).empty())
        note += cat(" (the baseline point of that name differs in ", what_differs(b, p), ")");
    report.notes.push_back(note);
  }
  return report;
}

// ---------------------------------------------------------------- output

namespace {
std::string name_of(const PointVerdict& p) { return p.name.empty() ? describe(p.params) : p.name; }
}  // namespace

std::string gate_markdown(const GateReport& r) {
  std::ostringstream os;
  std::map<Verdict, int> count;
  int allowed_missing = 0;  // missing points that --allow-missing lets through (not among the regressions)
  for (const auto& p : r.points) {
    ++count[p.verdict];
    if (p.verdict == Verdict::missing && p.reason.size() >= 9 && p.reason.compare(p.reason.size() - 9, 9, "(allowed)") == 0)
      ++allowed_missing;
  }
  os << "## llmbench gate: " << (r.passed() ? "PASS" : "FAIL") << "\n\n";
  os << "Baseline `" << r.baseline_name << "`, current `" << r.current_name << "`: " << r.points.size()
     << (r.points.size() == 1 ? " point; " : " points; ") << r.regressions << " regressed or missing";
  if (allowed_missing) os << ", " << allowed_missing << " missing (allowed)";
  for (Verdict v : {Verdict::improved, Verdict::inconclusive, Verdict::unchanged})
    if (count[v]) os << ", " << count[v] << " " << to_string(v);
  os << ".\n\n";
  os << "| point | metric | baseline | current | change | CI95 of ratio | threshold | verdict |\n";
  os << "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |\n";
  for (const auto& p : r.points) {
    if (p.verdict == Verdict::missing) {
      os << "| " << md_escape(name_of(p)) << " | | | | | | | **missing**: " << md_escape(p.reason) << " |\n";
      continue;
    }
    for (const auto& m : p.metrics) {
      const bool bad = m.verdict == Verdict::regressed;
      auto value = [&](double v) {
        return std::isnan(v) ? std::string("-") : is_memory(m.metric) ? format_bytes(std::uint64_t(v)) : number(v);
      };
      os << "| " << md_escape(name_of(p)) << " | " << m.metric << " | " << value(m.baseline) << " | "
         << value(m.current) << " | " << (std::isfinite(m.ratio) ? signed_percent(m.ratio) : "") << " | "
         << (m.has_ci ? cat("[", signed_percent(m.ci_lo), ", ", signed_percent(m.ci_hi), "]") : "") << " | "
         << percent(m.threshold) << " | " << (bad ? "**" : "") << to_string(m.verdict) << (bad ? "**" : "");
      if (m.verdict == Verdict::inconclusive) os << ": " << md_escape(m.reason);
      os << " |\n";
    }
  }
  if (!r.env_differences.empty()) {
    os << "\nEnvironments differ (allowed):\n";
    for (const auto& d : r.env_differences) os << "- " << md_escape(d) << "\n";
  }
  if (!r.notes.empty()) {
    os << "\nNotes:\n";
    for (const auto& n : r.notes) os << "- " << md_escape(n) << "\n";
  }
  os << "\nTimes: lower is better; *_tok_s: higher is better. Regressed = beyond the threshold and the "
        "bootstrap CI95 of the ratio of medians wholly beyond it.\n";
  return os.str();
}

namespace {

const char* json_kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// The member `key` of object `o` (at `path`), of the kind `want` says; Error naming the path otherwise.
// `path` by value (a view): a reference parameter bound to a temporary ("") makes GCC 13 warn that the result
// may dangle (-Wdangling-reference), though the result is part of `o`.
const json& member(const json& o, std::string_view path, const char* key, bool (json::*is)() const noexcept,
                   const char* want) {
  const auto it = o.find(key);
  if (it == o.end()) throw Error(cat(path, path.empty() ? "" : ".", key, ": missing"));
  if (!((*it).*is)()) throw Error(cat(path, path.empty() ? "" : ".", key, ": expected ", want, ", got ", json_kind(*it)));
  return *it;
}

void check_verdict_name(const json& v, const std::string& path) {
  for (Verdict known : {Verdict::improved, Verdict::unchanged, Verdict::regressed, Verdict::inconclusive, Verdict::missing})
    if (v.get<std::string>() == to_string(known)) return;
  throw Error(cat(path, ": unknown verdict '", v.get<std::string>(), "'"));
}

void check_strings(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end()) return;
  if (!it->is_array()) throw Error(cat(key, ": expected array, got ", json_kind(*it)));
  for (std::size_t i = 0; i < it->size(); ++i)
    if (!(*it)[i].is_string()) throw Error(cat(key, "[", i, "]: expected string, got ", json_kind((*it)[i])));
}

}  // namespace

void check_verdict_json(const json& j) {
  if (!j.is_object()) throw Error(cat("expected a gate verdict object (llmbench gate --json), got ", json_kind(j)));
  member(j, "", "passed", &json::is_boolean, "boolean");
  const json& points = member(j, "", "points", &json::is_array, "array");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string at = cat("points[", i, "]");
    if (!points[i].is_object()) throw Error(cat(at, ": expected object, got ", json_kind(points[i])));
    member(points[i], at, "name", &json::is_string, "string");
    check_verdict_name(member(points[i], at, "verdict", &json::is_string, "string"), at + ".verdict");
    member(points[i], at, "reason", &json::is_string, "string");
    const json& metrics = member(points[i], at, "metrics", &json::is_array, "array");
    for (std::size_t k = 0; k < metrics.size(); ++k) {
      const std::string mat = cat(at, ".metrics[", k, "]");
      if (!metrics[k].is_object()) throw Error(cat(mat, ": expected object, got ", json_kind(metrics[k])));
      member(metrics[k], mat, "metric", &json::is_string, "string");
      check_verdict_name(member(metrics[k], mat, "verdict", &json::is_string, "string"), mat + ".verdict");
      for (const char* key : {"baseline", "current", "ratio"}) {
        const auto it = metrics[k].find(key);
        if (it != metrics[k].end() && !it->is_number() && !it->is_null())
          throw Error(cat(mat, ".", key, ": expected number, got ", json_kind(*it)));
      }
    }
  }
  check_strings(j, "notes");
  check_strings(j, "env_differences");
}

namespace {
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }  // no value: null
}  // namespace

json to_json(const GateReport& r) {
  json points = json::array();
  for (const auto& p : r.points) {
    json metrics = json::array();
    for (const auto& m : p.metrics) {
      metrics.push_back({{"metric", m.metric},
                         {"higher_is_better", m.higher_is_better},
                         {"threshold", m.threshold},
                         {"baseline", number_or_null(m.baseline)},
                         {"current", number_or_null(m.current)},
                         {"ratio", number_or_null(m.ratio)},
                         {"ci95", m.has_ci ? json{m.ci_lo, m.ci_hi} : json(nullptr)},
                         {"baseline_cv", m.baseline_cv},
                         {"current_cv", m.current_cv},
                         {"verdict", to_string(m.verdict)},
                         {"reason", m.reason}});
    }
    points.push_back({{"name", name_of(p)},
                      {"params",
                       {{"model", p.params.model}, {"label", p.params.label}, {"batch", p.params.batch},
                        {"prompt_len", p.params.prompt_len}, {"max_new_tokens", p.params.max_new_tokens},
                        {"temperature", p.params.temperature}, {"attn", p.params.attn}, {"dtype", p.params.dtype},
                        {"weights", p.params.weights}, {"kv_dtype", p.params.kv_dtype}}},  // matched on too
                      {"verdict", to_string(p.verdict)},
                      {"reason", p.reason},
                      {"metrics", metrics}});
  }
  return {{"passed", r.passed()},      {"exit_code", r.exit_code()},
          {"regressions", r.regressions}, {"baseline", r.baseline_name},
          {"current", r.current_name}, {"points", points},
          {"env_differences", r.env_differences}, {"notes", r.notes}};
}

}  // namespace llmbench
