// `llmbench report`: the tables (HTML and Markdown) and the self-contained page around the charts.
#include "llmbench/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "html_internal.h"
#include "llmbench/report/format.h"
#include "llmbench/base/error.h"
#include "llmbench/report/web_assets.h"
#include "llmbench/stats/stats.h"

namespace llmbench {

namespace report_detail {

std::string model_label(const PointParams& p) { return p.label.empty() ? p.model : p.label; }

namespace {
template <class T, class F>
bool varies(const std::vector<const PointResult*>& points, F get) {
  std::set<T> seen;
  for (const auto* p : points) seen.insert(get(p->params));
  return seen.size() > 1;
}

Axes axes_of(const std::vector<const PointResult*>& all) {
  std::vector<const PointResult*> pts, loads;
  for (const auto* p : all) (p->load ? loads : pts).push_back(p);
  Axes a;
  a.model = varies<std::string>(pts, [](const PointParams& p) { return model_label(p); });
  a.dtype = varies<std::string>(pts, [](const PointParams& p) { return p.dtype; });
  a.attn = varies<std::string>(pts, [](const PointParams& p) { return p.attn; });
  a.weights = varies<std::string>(pts, [](const PointParams& p) { return p.weights; });
  a.kv_dtype = varies<std::string>(pts, [](const PointParams& p) { return p.kv_dtype; });
  a.batch = varies<int>(pts, [](const PointParams& p) { return p.batch; });
  a.prompt_len = varies<int>(pts, [](const PointParams& p) { return p.prompt_len; });
  a.max_new_tokens = varies<int>(pts, [](const PointParams& p) { return p.max_new_tokens; });
  a.temperature = varies<double>(pts, [](const PointParams& p) { return p.temperature; });
  a.device = varies<std::string>(pts, [](const PointParams& p) { return p.device; });
  a.load_lengths = varies<std::pair<int, int>>(
      loads, [](const PointParams& p) { return std::pair(p.prompt_len, p.max_new_tokens); });
  std::set<std::string> apis;
  for (const auto* p : loads) apis.insert(p->load->api);
  a.load_api = apis.size() > 1;
  return a;
}
}  // namespace

Axes varying_axes(const std::vector<ReportInput>& inputs) {
  std::vector<const PointResult*> pts;
  for (const auto& in : inputs)
    for (const auto& p : in.results.points) pts.push_back(&p);
  return axes_of(pts);
}

Axes varying_axes(const Results& results) {
  std::vector<const PointResult*> pts;
  for (const auto& p : results.points) pts.push_back(&p);
  return axes_of(pts);
}

std::string point_label(const PointParams& p, const Axes& axes, bool with_model) {
  std::string s = with_model ? model_label(p) + " " : "";
  s += cat("b=", p.batch, " p=", p.prompt_len, " n=", p.max_new_tokens);
  if (axes.temperature) s += " T=" + fmt_param(p.temperature);
  if (axes.dtype) s += " " + p.dtype;
  if (axes.weights) s += " " + storage_of(p.weights, p.dtype);
  if (axes.kv_dtype) s += " kv " + storage_of(p.kv_dtype, p.dtype);
  if (axes.attn) s += " " + p.attn;
  if (axes.device) s += " " + p.device;
  return s;
}

std::string point_label(const PointResult& p, const Axes& axes, bool with_model) {
  if (!p.load) return point_label(p.params, axes, with_model);
  const LoadResult& l = *p.load;
  std::string s = with_model ? model_label(p.params) + " " : "";
  s += is_trace_replay(l)    ? l.arrival + " replay"
       : l.request_rate > 0 ? cat("rate=", l.request_rate, "/s ", l.arrival)
                            : cat("c=", l.concurrency);
  if (l.max_concurrency > 0) s += cat(" c≤", l.max_concurrency);
  if (l.range_ratio > 0) s += cat(" ±", fmt_param(100 * l.range_ratio), "%");
  if (!l.stream) s += " no-stream";
  if (l.cancel_rate > 0) s += cat(" cancel ", fmt_param(l.cancel_rate), "%");
  if (l.turns > 1) s += cat(" ", l.turns, l.turns_stddev > 0 ? cat("±", fmt_param(l.turns_stddev)) : "", " turns");
  if (axes.load_lengths) s += cat(" p=", p.params.prompt_len, " n=", p.params.max_new_tokens);
  if (axes.load_api) s += " " + l.api;
  return s;
}

// The row of the side-by-side table a point goes in: points of several inputs with one key share a row.
std::string side_by_side_key(const PointParams& p) {
  return cat(model_label(p), "|", p.device, "|", p.dtype, "|", p.attn, "|", p.batch, "|", p.prompt_len, "|",
             p.max_new_tokens, "|", p.temperature, p.weights == "bf16" || p.weights.empty() ? "" : "|" + p.weights,
             p.kv_dtype == "bf16" || p.kv_dtype.empty() ? "" : "|kv " + p.kv_dtype);
}

std::string side_by_side_key(const PointResult& p) {
  if (!p.load) return side_by_side_key(p.params);
  const LoadResult& l = *p.load;
  return cat("load|", model_label(p.params), "|", l.api, "|", l.concurrency, "|", l.request_rate, "|", l.arrival, "|",
             l.dataset, "|", p.params.prompt_len, "|", p.params.max_new_tokens, "|", l.range_ratio, "|", l.max_concurrency, "|", l.prefix_len, "|", l.extra_body, l.stream ? "" : "|no-stream",
             l.trace_block_size ? cat("|block ", *l.trace_block_size) : "",
             l.turns > 1 ? cat("|turns ", l.turns, "±", l.turns_stddev, "|think ", l.turn_delay_ms, "±", l.turn_delay_stddev_ms) : "",
             l.cancel_rate > 0 ? cat("|cancel ", l.cancel_rate, " after ", l.cancel_delay_ms) : "");
}

const Summary* find_summary(const PointResult& point, const std::string& metric) {
  auto it = point.summary.find(metric);
  return it == point.summary.end() || it->second.n == 0 ? nullptr : &it->second;
}

double headline(const PointResult& point, const std::string& metric) {
  if (point.load && metric == "output_tok_s")
    return point.load->completed > 0 ? point.load->output_tokens_per_s : std::nan("");
  const Summary* s = find_summary(point, metric);
  return s ? s->trimmed_median : std::nan("");
}

std::vector<double> raw_values(const PointResult& point, const std::string& metric) {
  if (point.load) return load_metric_values(*point.load, metric);
  std::vector<double> v;
  for (const auto& r : point.runs) {
    if (metric == "e2e_ms") v.push_back(r.e2e_ms);
    else if (metric == "ttft_ms") v.push_back(r.ttft_ms);
    else if (metric == "tpot_ms") v.push_back(r.tpot_ms);
    else if (metric == "prefill_ms") v.push_back(r.prefill_ms);
    else if (metric == "itl_ms") v.insert(v.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  return v;
}

std::string fmt_num(double v) {
  if (std::isnan(v)) return "–";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  const int decimals = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
  char buf[64];
  if (a >= 1e15) std::snprintf(buf, sizeof buf, "%.4g", v);  // 1e150 in fixed notation has 151 digits
  else std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_param(double v) {
  if (std::isnan(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string fmt_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ULL << 30)) return fmt_num(b / (1ULL << 30)) + " GiB";
  if (bytes >= (1ULL << 20)) return fmt_num(b / (1ULL << 20)) + " MiB";
  if (bytes >= (1ULL << 10)) return fmt_num(b / (1ULL << 10)) + " KiB";
  return cat(bytes, " B");
}

}  // namespace report_detail

namespace {

using nlohmann::json;
using namespace report_detail;

// A table as plain text cells; the HTML and Markdown writers escape them.
struct Table {
  std::string caption;
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_class;  // "", "good", "warn" or "bad" per row
  bool facts = false;                   // a key/value list: text wraps, nothing right-aligned
};

struct Section {
  std::string id;
  std::string title;
  std::string note;  // one explanatory line under the title
  std::vector<Table> tables;
};

std::string pct(double fraction) { return fmt_num(fraction * 100) + " %"; }

// Peak allocated on a GPU, peak RSS on the host otherwise.
std::string peak_memory(const Memory& m) {
  if (m.peak_allocated_bytes > 0) return fmt_bytes(m.peak_allocated_bytes);
  if (m.peak_rss_bytes > 0) return fmt_bytes(m.peak_rss_bytes) + " RSS";
  return "–";
}

std::string bytes_or_dash(std::uint64_t b) { return b > 0 ? fmt_bytes(b) : "–"; }

// A load point's CV is the spread of its requests, not run-to-run noise: never flagged.
std::string cv_cell(const PointResult& p, const std::string& metric) {
  const Summary* s = find_summary(p, metric);
  if (!s) return "–";
  if (s->n < 2) return "n/a";  // one value has no spread: undefined, not 0 %
  return pct(s->cv) + (s->cv > kCvWarning && !p.load ? " (high)" : "");
}

// "5" runs, or a load point's "8 requests" / "7 requests, 1 failed" / "6 requests, 2 cancelled".
std::string runs_cell(const PointResult& p) {
  if (!p.load) return cat(p.runs.size());
  return cat(p.load->completed, " requests") + (p.load->failed ? cat(", ", p.load->failed, " failed") : "") +
         (p.load->cancelled ? cat(", ", p.load->cancelled, " cancelled") : "");
}

bool has_points(const ReportInput& in, bool load) {
  return std::any_of(in.results.points.begin(), in.results.points.end(),
                     [&](const PointResult& p) { return p.load.has_value() == load; });
}

// A load point cut short by Ctrl-C keeps status ok (load.partial): "ok (interrupted)", as `load` prints it.
std::string status_cell(const PointResult& p) {
  const std::string s = p.status == "failed" && !p.error.empty() ? "failed: " + p.error : p.status;
  return p.load && p.load->partial ? s + " (interrupted)" : s;
}

Table env_table(const ReportInput& in) {
  const Results& r = in.results;
  const EnvInfo& e = r.env;
  Table t{"Environment: " + in.name, {"fact", "value"}, {}, {}, true};
  auto add = [&](const std::string& k, const std::string& v) { t.rows.push_back({k, v}); };
  add("llmbench", e.tool_version + " (commit " + e.git_commit + ")");
  add("created", r.created_at);
  add("command", r.command);
  if (r.interrupted) add("interrupted", "yes: the sweep stopped early, later points are missing");
  add("os", e.os + " (" + e.kernel + ")");
  add("host", e.hostname);
  add("cpu", cat(e.cpu_model, ", ", e.cpu_cores, " cores"));
  add("ram", fmt_bytes(e.ram_bytes));
  add("compiler", e.compiler);
  add("libtorch", e.torch_version);
  add("cuda", e.cuda_available ? "runtime " + e.cuda_runtime + ", driver supports " + e.cuda_driver : "not available");
  for (const auto& g : e.gpus)
    add(cat("gpu ", g.index), cat(g.name, ", compute ", g.cc_major, ".", g.cc_minor, ", ", fmt_bytes(g.memory_bytes),
                                  ", ", g.sm_count, " SMs"));
  if (e.ceilings) {
    const Ceilings& c = *e.ceilings;
    add("copy bandwidth", cat(fmt_num(c.copy_gb_s), " GB/s on ", c.device));
    add("matmul rate", cat(fmt_num(c.matmul_tflop_s), " TFLOP/s ", c.matmul_dtype, " ", c.matmul_size, "³"));
  }
  return t;
}

Table config_table(const ReportInput& in, const Axes& axes) {
  Table t{"Configuration: " + in.name,
          {"point", "model", "weights", "matmul weights", "device", "dtype", "KV cache", "attn", "batch", "prompt len", "new tokens",
           "temperature", "top-k", "top-p", "seed", "warm-up", "runs", "trim", "prompt", "tokenizer", "paths"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (p.load) continue;  // load_config_table
    const PointParams& q = p.params;
    std::string paths;
    for (const auto& [name, on] : p.paths) paths += (paths.empty() ? "" : ", ") + name + (on ? "" : " off");
    t.rows.push_back({point_label(q, axes), q.model, p.weights == "checkpoint" ? p.checkpoint : p.weights,
                      storage_of(q.weights, q.dtype), q.device, q.dtype, storage_of(q.kv_dtype, q.dtype), q.attn, cat(q.batch), cat(q.prompt_len), cat(q.max_new_tokens), fmt_param(q.temperature),
                      cat(q.top_k), fmt_param(q.top_p), cat(q.seed), cat(p.warmup), cat(p.runs.size()), cat(p.trim),
                      p.prompt_source, p.tokenizer, paths.empty() ? "–" : paths});
  }
  return t;
}

Table load_config_table(const ReportInput& in, const Axes& axes) {
  Table t{"Load configuration: " + in.name,
          {"point", "endpoint", "api", "concurrency", "rate /s", "arrival", "requests", "turns", "duration s", "warm-up",
           "dataset", "prompt len", "output len", "timeout s", "SLO", "extra body", "output tokens from", "tokenizer"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (!p.load) continue;
    const LoadResult& l = *p.load;
    const std::string slo = slo_text(l.slo);
    const std::string spread = l.range_ratio > 0 ? " ±" + fmt_param(100 * l.range_ratio) + " %" : "";
    const std::string concurrency = l.concurrency   ? cat(l.concurrency)
                                    : l.max_concurrency ? cat("≤ ", l.max_concurrency, " (cap)")
                                                        : "–";
    t.rows.push_back({point_label(p, axes), l.endpoint, l.api, concurrency,
                      l.request_rate > 0 ? fmt_num(l.request_rate) : "–", l.arrival.empty() ? "–" : l.arrival,
                      l.num_requests ? cat(l.num_requests) : "–",
                      l.turns > 1 ? conversations_text(l) : "–",
                      l.duration_s > 0 ? fmt_num(l.duration_s) : "–",
                      cat(l.warmup_requests), l.dataset,
                      (l.prefix_len > 0 ? cat(l.prefix_len, " shared + ", p.params.prompt_len - l.prefix_len)
                                        : cat(p.params.prompt_len)) + spread,
                      cat(p.params.max_new_tokens) + spread,
                      fmt_num(l.timeout_s), slo.empty() ? "–" : slo, l.extra_body.empty() ? "–" : l.extra_body,
                      l.token_count_source, p.tokenizer});
  }
  return t;
}

Table summary_table(const ReportInput& in, const Axes& axes) {
  Table t{"Summary: " + in.name + " (trimmed medians)",
          {"point", "status", "runs / requests", "TTFT ms", "TPOT ms", "e2e ms", "ITL p50 ms", "ITL p99 ms", "output tok/s",
           "decode tok/s", "prefill tok/s", "peak memory", "CV e2e", "verification"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    const Summary* itl = find_summary(p, "itl_ms");
    t.rows.push_back({point_label(p, axes), status_cell(p), runs_cell(p), fmt_num(headline(p, "ttft_ms")),
                      fmt_num(headline(p, "tpot_ms")), fmt_num(headline(p, "e2e_ms")),
                      itl ? fmt_num(itl->p50) : "–", itl ? fmt_num(itl->p99) : "–",
                      fmt_num(headline(p, "output_tok_s")), fmt_num(headline(p, "decode_tok_s")),
                      fmt_num(headline(p, "prefill_tok_s")), peak_memory(p.memory), cv_cell(p, "e2e_ms"),
                      verification_summary(p) + (p.quality ? "; " + quality_summary(p) : "")});
    t.row_class.push_back(p.status != "ok" ? "bad" : p.load && (p.load->failed > 0 || p.load->partial) ? "warn" : "");
  }
  return t;
}

Table percentile_table(const ReportInput& in, const Axes& axes) {
  Table t{"Percentiles: " + in.name,
          {"point", "metric", "n", "mean", "std", "min", "p50", "p90", "p95", "p99", "max", "trimmed median",
           "CI95 of median", "CV"},
          {},
          {}};
  const char* metrics[] = {"ttft_ms", "prefill_ms", "tpot_ms", "e2e_ms", "itl_ms", "output_tok_s"};
  for (const auto& p : in.results.points) {
    for (const char* m : metrics) {
      const Summary* s = find_summary(p, m);
      if (!s) continue;
      t.rows.push_back({point_label(p, axes), m, cat(s->n), fmt_num(s->mean), fmt_num(s->std), fmt_num(s->min),
                        fmt_num(s->p50), fmt_num(s->p90), fmt_num(s->p95), fmt_num(s->p99), fmt_num(s->max),
                        fmt_num(s->trimmed_median), fmt_num(s->ci95_lo) + " – " + fmt_num(s->ci95_hi),
                        cv_cell(p, m)});
    }
  }
  return t;
}

Table load_table(const ReportInput& in) {
  Table t{"Load: " + in.name,
          {"model", "concurrency", "rate /s", "completed", "failed", "errors", "req/s", "out tok/s", "TTFT p50",
           "TTFT p99", "TPOT p50", "ITL p50", "ITL p99", "e2e p50", "goodput"},
          {},
          {}};
  auto p_of = [](const PointResult& p, const char* m, double Summary::*q) {
    const Summary* s = find_summary(p, m);
    return s ? fmt_num(s->*q) : std::string("–");
  };
  for (const auto& p : in.results.points) {
    if (!p.load) continue;
    const LoadResult& l = *p.load;
    std::string errors;
    for (const auto& [reason, n] : l.errors) errors += (errors.empty() ? "" : ", ") + reason + " " + cat(n);
    if (l.cancelled > 0) errors += cat(errors.empty() ? "" : ", ", "cancelled by the client ", l.cancelled);
    t.rows.push_back({model_label(p.params), l.concurrency ? cat(l.concurrency) : "–",
                      l.request_rate > 0 ? fmt_num(l.request_rate) : "–", cat(l.completed), cat(l.failed), errors,
                      fmt_num(l.requests_per_s), fmt_num(l.output_tokens_per_s), p_of(p, "ttft_ms", &Summary::p50),
                      p_of(p, "ttft_ms", &Summary::p99), p_of(p, "tpot_ms", &Summary::p50),
                      p_of(p, "itl_ms", &Summary::p50), p_of(p, "itl_ms", &Summary::p99),
                      p_of(p, "e2e_ms", &Summary::p50), l.slo.empty() ? "–" : pct(l.goodput_fraction)});
    t.row_class.push_back(l.search && l.search->best ? "good" : l.failed > 0 ? "warn" : "");
  }
  return t;
}

// `load --server-metrics`: what the server's /metrics said about each point (series that moved or are set).
Table server_metrics_table(const ReportInput& in, const Axes& axes) {
  constexpr std::size_t kRowsPerPoint = 60;
  Table t{"Server metrics: " + in.name + " (the server's /metrics during each point)",
          {"point", "series", "kind", "mean / increase", "max / per s", "p50", "p99"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (!p.load || !p.load->server_metrics) continue;
    const ServerMetrics& m = *p.load->server_metrics;
    const std::string point = point_label(p, axes);
    const std::size_t first = t.rows.size();
    if (m.scrapes == 0) t.rows.push_back({point, m.url, "no page read", m.error, "–", "–", "–"});
    auto room = [&] { return t.rows.size() - first < kRowsPerPoint; };
    for (const auto& [key, g] : m.gauges)
      if (g.max != 0 && room()) t.rows.push_back({point, key, "gauge", fmt_num(g.mean), fmt_num(g.max), "–", "–"});
    for (const auto& [key, c] : m.counters)
      if (c.increase > 0 && room()) t.rows.push_back({point, key, "counter", fmt_num(c.increase), fmt_num(c.per_s), "–", "–"});
    for (const auto& [key, h] : m.histograms)
      if (h.count > 0 && room())
        t.rows.push_back({point, key, "histogram", h.mean ? fmt_num(*h.mean) : "–", cat(fmt_num(h.count), " obs"),
                          h.p50 ? fmt_num(*h.p50) : "–", h.p99 ? fmt_num(*h.p99) : "–"});
  }
  return t;
}

// `load --slice-s`: each point's time in windows, so drift or a warm-up shows.
Table slices_table(const ReportInput& in, const Axes& axes) {
  Table t{"Time slices: " + in.name + " (requests by issue time, output tokens by arrival)",
          {"point", "from s", "to s", "issued", "done", "failed", "TTFT p50 ms", "TPOT p50 ms", "e2e p50 ms", "out tok/s"},
          {},
          {}};
  auto ms = [](const std::optional<double>& v) { return v ? fmt_num(*v) : std::string("–"); };
  for (const auto& p : in.results.points) {
    if (!p.load) continue;
    for (const auto& s : p.load->by_slice) {
      t.rows.push_back({point_label(p, axes), fmt_num(s.start_s), fmt_num(s.start_s + s.duration_s), cat(s.started),
                        cat(s.completed), cat(s.failed), ms(s.ttft_ms_p50), ms(s.tpot_ms_p50), ms(s.e2e_ms_p50),
                        fmt_num(s.output_tokens_per_s)});
      t.row_class.push_back(s.failed > 0 ? "warn" : "");
    }
  }
  return t;
}

// A fraction as "62.5 %"; "–" when none.
std::string percent(const std::optional<double>& v) { return v ? fmt_param(100 * *v) + " %" : std::string("–"); }

// The server's prefix cache, as its usage told (prompt_tokens_details.cached_tokens), per load point that had one.
Table prompt_cache_table(const ReportInput& in, const Axes& axes) {
  Table t{"Prompt cache: " + in.name + " (the server's usage: prompt_tokens_details.cached_tokens)",
          {"point", "requests that told", "prompt tokens", "cached tokens", "hit rate"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (!p.load || !p.load->prompt_cache) continue;
    const auto& c = *p.load->prompt_cache;
    t.rows.push_back({point_label(p, axes), cat(c.requests, " of ", p.load->completed), cat(c.prompt_tokens),
                      cat(c.cached_tokens), percent(c.hit_rate)});
    t.row_class.push_back("");
  }
  return t;
}

// `load --turns`: each turn of the conversations, so the cost of a growing history shows.
Table turns_table(const ReportInput& in, const Axes& axes) {
  Table t{"Conversations by turn: " + in.name + " (each turn sends the history so far)",
          {"point", "turn", "done", "failed", "prompt tokens (mean)", "cached", "TTFT p50 ms", "TTFT mean ms", "e2e p50 ms"},
          {},
          {}};
  auto ms = [](const std::optional<double>& v) { return v ? fmt_num(*v) : std::string("–"); };
  for (const auto& p : in.results.points) {
    if (!p.load) continue;
    for (const auto& turn : p.load->by_turn) {
      t.rows.push_back({point_label(p, axes), cat(turn.turn), cat(turn.completed), cat(turn.failed),
                        fmt_num(turn.prompt_tokens_mean), percent(turn.cached_fraction), ms(turn.ttft_ms_p50),
                        ms(turn.ttft_ms_mean), ms(turn.e2e_ms_p50)});
      t.row_class.push_back(turn.failed > 0 ? "warn" : "");
    }
  }
  return t;
}

// `load --search` answers: the highest load that met the goodput target, per model.
Table search_table(const ReportInput& in) {
  Table t{"Search: " + in.name, {"model", "load", "objective", "highest meeting it", "lowest missing it", "probes"}, {}, {}};
  for (const auto& s : search_outcomes(in.results)) {
    const bool rate = s.axis == "request_rate";
    auto show = [&](const std::optional<double>& v) { return v ? fmt_param(*v) + (rate ? " /s" : "") : std::string("none"); };
    t.rows.push_back({s.label, rate ? "request rate" : "concurrency",
                      cat("goodput ≥ ", fmt_param(100 * s.target), " % under ", s.slo),
                    !s.best && s.interrupted ? std::string("none (interrupted)") : show(s.best),
                      s.best && !s.lowest_miss ? (s.interrupted ? "none (interrupted)" : "none (search higher)")
                                               : show(s.lowest_miss),
                      cat(s.probes)});
    t.row_class.push_back(s.best ? "" : "bad");
  }
  return t;
}

Table memory_table(const ReportInput& in, const Axes& axes) {
  Table t{"Memory: " + in.name,
          {"point", "peak allocated", "peak reserved", "device in use", "weights", "KV cache", "peak RSS (host)"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (p.status != "ok" || p.load) continue;
    const Memory& m = p.memory;
    t.rows.push_back({point_label(p.params, axes), bytes_or_dash(m.peak_allocated_bytes),
                      bytes_or_dash(m.peak_reserved_bytes), bytes_or_dash(m.device_in_use_bytes),
                      bytes_or_dash(m.weights_bytes), bytes_or_dash(m.kv_cache_bytes), bytes_or_dash(m.peak_rss_bytes)});
  }
  return t;
}

Table stages_table(const ReportInput& in, const Axes& axes) {
  Table t{"Stages: " + in.name + " (trimmed medians, ms)",
          {"point", "tokenize", "kv_init", "prefill", "decode", "detokenize", "sum"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (p.status != "ok" || p.load) continue;
    const Stages& s = p.stages;
    t.rows.push_back({point_label(p.params, axes), fmt_num(s.tokenize_ms), fmt_num(s.kv_init_ms),
                      fmt_num(s.prefill_ms), fmt_num(s.decode_ms), fmt_num(s.detokenize_ms),
                      fmt_num(s.tokenize_ms + s.kv_init_ms + s.prefill_ms + s.decode_ms + s.detokenize_ms)});
  }
  return t;
}

Table efficiency_table(const ReportInput& in, const Axes& axes) {
  Table t{"Efficiency and cold start: " + in.name,
          {"point", "MBU (decode)", "MFU (prefill)", "bytes per decode step", "prefill FLOPs", "load ms",
           "cold: first generate ms", "warm: e2e ms", "cold / warm"},
          {},
          {}};
  for (const auto& p : in.results.points) {
    if (p.status != "ok" || p.load) continue;
    const Roofline& r = p.roofline;
    const double warm = headline(p, "e2e_ms");
    const bool has_cold = p.cold.first_generate_ms > 0;
    t.rows.push_back({point_label(p.params, axes), r.mbu ? pct(*r.mbu) : "unknown", r.mfu ? pct(*r.mfu) : "unknown",
                      r.decode_bytes_per_step > 0 ? fmt_bytes(static_cast<std::uint64_t>(r.decode_bytes_per_step)) : "–",
                      r.prefill_flops > 0 ? fmt_num(r.prefill_flops / 1e9) + " G" : "–",
                      p.cold.load_ms > 0 ? fmt_num(p.cold.load_ms) : "–",
                      has_cold ? fmt_num(p.cold.first_generate_ms) : "–", fmt_num(warm),
                      has_cold && warm > 0 ? fmt_num(p.cold.first_generate_ms / warm) + "×" : "–"});
  }
  return t;
}

// Baseline (the first file) against each other file, per matching point and headline metric.
Table side_by_side_table(const std::vector<ReportInput>& inputs, const Axes& axes) {
  Table t{"Side by side (Δ against " + inputs.front().name + ")", {"point", "metric"}, {}, {}};
  for (const auto& in : inputs) t.head.push_back(in.name);
  for (std::size_t i = 1; i < inputs.size(); ++i) t.head.push_back("Δ " + inputs[i].name);
  // Keys in first-seen order; per input, the first point with each key (maps keep this linear in
  // the number of points: a linear search per key took seconds for 2,000-point files).
  std::vector<std::string> keys;
  std::vector<std::string> labels;
  std::vector<std::map<std::string, const PointResult*>> by_key(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (const auto& p : inputs[i].results.points) {
      std::string key = side_by_side_key(p);
      bool new_key = std::all_of(by_key.begin(), by_key.end(), [&](const auto& m) { return !m.count(key); });
      if (new_key) {
        keys.push_back(key);
        labels.push_back(point_label(p, axes));
      }
      by_key[i].emplace(std::move(key), &p);
    }
  // Files without a point in common (a run file and a load sweep): no rows, each would be half empty.
  const bool shared = std::any_of(keys.begin(), keys.end(), [&](const std::string& key) {
    return std::count_if(by_key.begin(), by_key.end(), [&](const auto& m) { return m.count(key) > 0; }) > 1;
  });
  if (!shared)
    return Table{"Side by side",
                 {"note"},
                 {{"No point is in more than one file (a run's points and a load sweep's never match): nothing to "
                   "compare."}},
                 {""},
                 true};
  auto find = [&](std::size_t input, const std::string& key) -> const PointResult* {
    auto it = by_key[input].find(key);
    return it == by_key[input].end() ? nullptr : it->second;
  };
  const std::pair<const char*, const char*> metrics[] = {
      {"ttft_ms", "TTFT ms"}, {"tpot_ms", "TPOT ms"}, {"e2e_ms", "e2e ms"}, {"output_tok_s", "output tok/s"}};
  for (std::size_t k = 0; k < keys.size(); ++k) {
    for (const auto& [metric, title] : metrics) {
      std::vector<std::string> row{labels[k], title};
      std::vector<double> values;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const PointResult* p = find(i, keys[k]);
        values.push_back(p ? headline(*p, metric) : std::nan(""));
        row.push_back(fmt_num(values.back()));
      }
      std::string cls;
      for (std::size_t i = 1; i < values.size(); ++i) {
        const double base = values[0], cur = values[i];
        if (std::isnan(base) || std::isnan(cur) || base == 0) {
          row.push_back("–");
          continue;
        }
        const double change = (cur - base) / base;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.2f %%", change * 100);
        row.push_back(buf);
        // Colour only changes beyond the noise a CV warning would flag.
        const double worse = std::string(metric) == "output_tok_s" ? -change : change;
        if (worse > kCvWarning) cls = "bad";
        else if (worse < -kCvWarning && cls.empty()) cls = "good";
      }
      t.rows.push_back(row);
      t.row_class.push_back(cls);
    }
  }
  return t;
}

std::string cell_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt_num(v.get<double>());
  if (v.is_null()) return "–";
  if (v.is_array() && v.empty()) return "none";
  if (v.is_array() && std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); })) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : "; ") + cell_text(e);
    return s;
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Pass/fail colouring from the verdict-like values of a row. A flattened row also holds its outer row's verdict
// (a gate point's "regressed"); its own is the innermost ("metrics.verdict"), so only the most deeply nested
// verdict-like values colour it.
std::string verdict_class(const json& row) {
  enum Kind { kNone, kNeutral, kGood, kWarn, kBad };  // kNeutral: a verdict that asks for no colour
  auto kind = [](const std::string& key, const json& value) {
    if (value.is_string()) {
      std::string v = value.get<std::string>();
      std::transform(v.begin(), v.end(), v.begin(), ::tolower);
      if (v == "fail" || v == "failed" || v == "regression" || v == "regressed") return kBad;
      if (v == "inconclusive" || v == "missing") return kWarn;
      if (v == "pass" || v == "passed" || v == "improved" || v == "improvement") return kGood;
      if (v == "unchanged") return kNeutral;
    } else if (value.is_boolean() && (key == "pass" || key == "passed" || key == "ok")) {
      return value.get<bool>() ? kGood : kBad;
    }
    return kNone;
  };
  auto depth = [](const std::string& key) { return std::count(key.begin(), key.end(), '.'); };
  long deepest = -1;
  for (auto it = row.begin(); it != row.end(); ++it)
    if (kind(it.key(), *it) != kNone) deepest = std::max<long>(deepest, depth(it.key()));
  int worst = kNone;
  for (auto it = row.begin(); it != row.end(); ++it)
    if (depth(it.key()) == deepest) worst = std::max<int>(worst, kind(it.key(), *it));
  return worst == kBad ? "bad" : worst == kWarn ? "warn" : worst == kGood ? "good" : "";
}

bool is_object_array(const json& j) {
  return j.is_array() && !j.empty() && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_object(); });
}

// "k=v k=v" of an object's members.
std::string inline_object(const json& o) {
  std::string s;
  for (auto it = o.begin(); it != o.end(); ++it) s += (s.empty() ? "" : " ") + it.key() + "=" + cell_text(*it);
  return s;
}

// Rows with nested row lists (gate: points[].metrics[]) become one flat row per innermost entry; the
// outer fields repeat, and a name both levels use gets the list's name in front on the inner one.
std::vector<json> flatten_rows(const json& rows) {
  std::vector<json> out;
  for (const auto& r : rows) {
    json base = json::object();
    const json* nested = nullptr;
    std::string nested_key;
    for (auto it = r.begin(); it != r.end(); ++it) {
      if (!nested && is_object_array(*it)) {
        nested = &*it;
        nested_key = it.key();
      } else if (it->is_object()) {
        base[it.key()] = inline_object(*it);
      } else {
        base[it.key()] = *it;
      }
    }
    if (!nested) {
      out.push_back(base);
      continue;
    }
    for (const auto& child : flatten_rows(*nested)) {
      json row = base;
      for (auto it = child.begin(); it != child.end(); ++it)
        row[base.contains(it.key()) ? nested_key + "." + it.key() : it.key()] = *it;
      out.push_back(row);
    }
  }
  return out;
}

Table object_rows_table(const std::string& caption, const json& rows) {
  Table t{caption, {}, {}, {}};
  const std::vector<json> flat = flatten_rows(rows);
  // Columns that came from an object (a point's params) first: they say what the row is about.
  for (const auto& r : rows)
    for (auto it = r.begin(); it != r.end(); ++it)
      if (it->is_object() && std::find(t.head.begin(), t.head.end(), it.key()) == t.head.end())
        t.head.push_back(it.key());
  for (const auto& r : flat)
    for (auto it = r.begin(); it != r.end(); ++it)
      if (std::find(t.head.begin(), t.head.end(), it.key()) == t.head.end()) t.head.push_back(it.key());
  // Verdicts last, where the eye ends a row.
  std::stable_partition(t.head.begin(), t.head.end(),
                        [](const std::string& h) { return h.find("verdict") == std::string::npos; });
  for (const auto& r : flat) {
    std::vector<std::string> row;
    for (const auto& h : t.head) row.push_back(r.contains(h) ? cell_text(r[h]) : "–");
    t.rows.push_back(row);
    t.row_class.push_back(verdict_class(r));
  }
  return t;
}

// The gate JSON shown generically: its scalar facts, then every list of rows it holds.
std::vector<Table> gate_tables(const json& gate) {
  std::vector<Table> out;
  if (is_object_array(gate)) {
    out.push_back(object_rows_table("Gate verdicts", gate));
    return out;
  }
  if (!gate.is_object()) return out;
  Table facts{"Gate", {"field", "value"}, {}, {}, true};
  for (auto it = gate.begin(); it != gate.end(); ++it) {
    if (is_object_array(*it)) continue;
    facts.rows.push_back({it.key(), it->is_object() ? inline_object(*it) : cell_text(*it)});
    json one = json::object();
    one[it.key()] = *it;
    facts.row_class.push_back(verdict_class(one));
  }
  if (!facts.rows.empty()) out.push_back(facts);
  for (auto it = gate.begin(); it != gate.end(); ++it)
    if (is_object_array(*it)) out.push_back(object_rows_table("Gate: " + it.key(), *it));
  return out;
}

std::vector<Section> build_sections(const std::vector<ReportInput>& inputs, const std::optional<json>& gate) {
  const Axes axes = varying_axes(inputs);
  std::vector<Section> s;
  s.push_back({"summary", "Summary",
               "Trimmed medians over the timed runs; CV is std / mean of e2e (flagged above 5 %). Load points "
               "(llmbench load): over the completed requests, output tok/s is the achieved throughput, and the CV "
               "is the spread of the requests (not flagged).",
               {}});
  for (const auto& in : inputs) s.back().tables.push_back(summary_table(in, axes));
  if (inputs.size() > 1) {
    s.push_back({"files", "Files side by side", "The first file is the baseline.", {}});
    s.back().tables.push_back(side_by_side_table(inputs, axes));
  }
  if (gate) s.push_back({"gate", "Gate verdicts", "", gate_tables(*gate)});
  const bool any_load = std::any_of(inputs.begin(), inputs.end(), [](const ReportInput& in) { return has_points(in, true); });
  if (any_load)
    s.push_back({"load", "Load: latency against throughput",
                 "llmbench load sweeps: p50 and p99 of TTFT, TPOT, ITL and end-to-end latency against achieved output "
                 "throughput, one line per file and model, one point per concurrency or request rate (failed "
                 "requests excluded); --no-stream points have their own line, in the e2e panels only.",
                 {}});
  if (any_load)
    for (const auto& in : inputs) {
      s.back().tables.push_back(load_table(in));
      if (!search_outcomes(in.results).empty()) s.back().tables.push_back(search_table(in));
      const bool scraped = std::any_of(in.results.points.begin(), in.results.points.end(),
                                       [](const PointResult& p) { return p.load && p.load->server_metrics; });
      if (scraped) s.back().tables.push_back(server_metrics_table(in, axes));
      const bool turns = std::any_of(in.results.points.begin(), in.results.points.end(),
                                     [](const PointResult& p) { return p.load && !p.load->by_turn.empty(); });
      if (turns) s.back().tables.push_back(turns_table(in, axes));
      const bool sliced = std::any_of(in.results.points.begin(), in.results.points.end(),
                                      [](const PointResult& p) { return p.load && !p.load->by_slice.empty(); });
      if (sliced) s.back().tables.push_back(slices_table(in, axes));
      const bool cached = std::any_of(in.results.points.begin(), in.results.points.end(),
                                      [](const PointResult& p) { return p.load && p.load->prompt_cache; });
      if (cached) s.back().tables.push_back(prompt_cache_table(in, axes));
    }
  s.push_back({"sweeps", "Sweeps", "Throughput and TPOT against each swept axis, one line per other setting.", {}});
  s.push_back({"models", "Models", "", {}});
  s.push_back({"stages", "Stage breakdown", "Where the time of one generate goes.", {}});
  for (const auto& in : inputs)
    if (has_points(in, false)) s.back().tables.push_back(stages_table(in, axes));
  s.push_back({"efficiency", "MBU, MFU, memory and cold start",
               "MBU and MFU against ceilings measured on the same device; cold is the first generate of the process.",
               {}});
  for (const auto& in : inputs) {
    if (!has_points(in, false)) continue;
    s.back().tables.push_back(efficiency_table(in, axes));
    s.back().tables.push_back(memory_table(in, axes));
  }
  s.push_back({"cold", "Cold versus warm", "", {}});
  s.push_back({"distributions", "Distributions",
               "ECDF of e2e, TTFT and ITL per point, with P50, P90 and P99 marked.", {}});
  for (const auto& in : inputs) s.back().tables.push_back(percentile_table(in, axes));
  s.push_back({"environment", "Environment and configuration", "", {}});
  for (const auto& in : inputs) {
    s.back().tables.push_back(env_table(in));
    if (has_points(in, false)) s.back().tables.push_back(config_table(in, axes));
    if (has_points(in, true)) s.back().tables.push_back(load_config_table(in, axes));
  }
  return s;
}

bool numeric_cell(const std::string& c) {
  return !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) ||
                        ((c[0] == '-' || c[0] == '+') && c.size() > 1 && std::isdigit(static_cast<unsigned char>(c[1]))));
}

void write_table_html(std::ostringstream& os, const Table& t) {
  os << (t.facts ? "<div class=\"table-wrap\"><table class=\"facts\">\n" : "<div class=\"table-wrap\"><table>\n");
  if (!t.caption.empty()) os << "<caption>" << html_escape(t.caption) << "</caption>\n";
  os << "<thead><tr>";
  for (const auto& h : t.head) os << "<th>" << html_escape(h) << "</th>";
  os << "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const std::string cls = i < t.row_class.size() ? t.row_class[i] : "";
    os << (cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">");
    for (const auto& c : t.rows[i])
      os << (!t.facts && numeric_cell(c) ? "<td class=\"num\">" : "<td>") << html_escape(c) << "</td>";
    os << "</tr>\n";
  }
  if (t.rows.empty()) os << "<tr><td colspan=\"" << std::max<std::size_t>(1, t.head.size()) << "\">none</td></tr>\n";
  os << "</tbody></table></div>\n";
}

std::string md_cell(const std::string& c) {
  const std::string out = md_escape(c);
  return out.empty() ? " " : out;
}

void write_table_md(std::ostringstream& os, const Table& t) {
  if (!t.caption.empty()) os << "**" << md_cell(t.caption) << "**\n\n";
  os << "|";
  for (const auto& h : t.head) os << " " << md_cell(h) << " |";
  os << "\n|";
  for (std::size_t i = 0; i < t.head.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& r : t.rows) {
    os << "|";
    for (const auto& c : r) os << " " << md_cell(c) << " |";
    os << "\n";
  }
  os << "\n";
}

// JSON that can sit inside <script>: '<', '>' and '&' only occur inside strings, where \u escapes mean the same.
std::string script_json(const json& j) {
  const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

// A bundle inside <script>: "</script" would end the element early.
std::string script_text(const std::string& js) {
  std::string out;
  out.reserve(js.size());
  for (std::size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && i + 1 < js.size() && js[i + 1] == '/' && i + 8 <= js.size()) {
      std::string tag = js.substr(i + 2, 6);
      std::transform(tag.begin(), tag.end(), tag.begin(), ::tolower);
      if (tag == "script") {
        out += "<\\/";
        ++i;
        continue;
      }
    }
    out += js[i];
  }
  return out;
}

constexpr const char* kStyle = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 2px 0; color: #c9cfdb; }
nav { padding: 8px 28px; background: #e8ebf0; position: sticky; top: 0; z-index: 1; }
nav a { margin-right: 14px; color: #2a4d8f; text-decoration: none; }
main { padding: 8px 28px 40px; }
section { background: #fff; border-radius: 6px; padding: 6px 18px 16px; margin: 16px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 18px; margin: 12px 0 4px; }
.note { color: #5a6375; margin: 0 0 8px; }
.notice { background: #fff4d6; border: 1px solid #e5b93c; padding: 10px 14px; border-radius: 6px; margin: 16px 0; }
.table-wrap { overflow-x: auto; margin: 10px 0; }
table { border-collapse: collapse; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border-bottom: 1px solid #e3e6eb; padding: 3px 9px; text-align: left; white-space: nowrap; }
th { background: #f0f2f5; white-space: normal; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.facts td { white-space: normal; word-break: break-word; max-width: 1100px; }
tr.bad td { background: #fde8e8; }
tr.good td { background: #e7f6ea; }
tr.warn td { background: #fff6dc; }
figure.chart { margin: 14px 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; }
)CSS";

// Renders every chart, then tells a watching test how it went.
constexpr const char* kDriver = R"JS(
(function () {
  var charts = JSON.parse(document.getElementById('llmbench-charts').textContent);
  window.__chartsTotal = charts.length;
  window.__chartsRendered = 0;
  window.__chartErrors = [];
  window.__chartsDone = false;
  var jobs = charts.map(function (c) {
    var el = document.getElementById(c.id);
    return vegaEmbed(el, c.spec, { actions: false, renderer: 'svg' }).then(function () {
      if (el.querySelector('svg, canvas')) window.__chartsRendered++;
      else window.__chartErrors.push(c.id + ': nothing drawn');
    }, function (err) {
      window.__chartErrors.push(c.id + ': ' + err);
      console.error('llmbench chart ' + c.id + ' failed: ' + err);
    });
  });
  Promise.all(jobs).then(function () { window.__chartsDone = true; });
})();
)JS";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::optional<WebAssets> load_web_assets(const std::string& node_modules, std::string* why) {
  namespace fs = std::filesystem;
  WebAssets a;
  a.dir = node_modules;
  const std::pair<const char*, std::string*> files[] = {{"vega/build/vega.min.js", &a.vega},
                                                        {"vega-lite/build/vega-lite.min.js", &a.vega_lite},
                                                        {"vega-embed/build/vega-embed.min.js", &a.vega_embed}};
  for (const auto& [rel, dst] : files) {
    const fs::path path = fs::path(node_modules) / rel;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    if (in) ss << in.rdbuf();
    if (!in || ss.str().empty()) {
      if (why) *why = cat(path.string(), " is missing (run scripts/fetch-web-assets.sh, or set LLMBENCH_WEB_ASSETS)");
      return std::nullopt;
    }
    *dst = ss.str();
  }
  return a;
}

std::optional<WebAssets> find_web_assets(std::string* why) {
  const char* env = std::getenv("LLMBENCH_WEB_ASSETS");
  if (env && *env) return load_web_assets(env, why);
  if (auto embedded = embedded_web_assets()) return embedded;
  if (why)
    *why = "this llmbench was built without the chart bundles (run scripts/fetch-web-assets.sh and rebuild, or set "
           "LLMBENCH_WEB_ASSETS to a node_modules folder with vega, vega-lite and vega-embed)";
  return std::nullopt;
}

std::string render_html(const std::vector<ReportInput>& inputs, const ReportOptions& options) {
  if (inputs.empty()) throw Error("report: no results to show");
  const std::vector<Section> sections = build_sections(inputs, options.gate);
  const json charts = options.assets ? chart_specs(inputs) : json::array();

  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
     << "<title>llmbench report</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  os << "<header><h1>llmbench report</h1>\n";
  for (const auto& in : inputs) {
    std::size_t n = in.results.points.size();
    os << "<p>" << html_escape(in.name) << " · " << n << (n == 1 ? " point" : " points") << " · "
       << html_escape(in.results.created_at) << " · llmbench " << html_escape(in.results.env.tool_version) << "</p>\n";
  }
  auto charts_in = [&](const Section& s) {
    std::vector<const json*> here;
    for (const auto& c : charts)
      if (c["section"] == s.id) here.push_back(&c);
    return here;
  };
  os << "</header>\n<nav>";
  for (const auto& s : sections)
    if (!s.tables.empty() || !charts_in(s).empty())
      os << "<a href=\"#" << s.id << "\">" << html_escape(s.title) << "</a>";
  os << "</nav>\n<main>\n";
  if (!options.assets)
    os << "<div class=\"notice\" id=\"charts-missing\"><strong>Charts are missing:</strong> the Vega bundles were "
          "not found when this report was written, so it holds the tables only. Run scripts/fetch-web-assets.sh and "
          "rebuild llmbench (or set LLMBENCH_WEB_ASSETS to a node_modules folder with vega, vega-lite and "
          "vega-embed), then write the report again.</div>\n";

  for (const auto& s : sections) {
    const std::vector<const json*> here = charts_in(s);
    if (s.tables.empty() && here.empty()) continue;
    os << "<section id=\"" << s.id << "\">\n<h2>" << html_escape(s.title) << "</h2>\n";
    if (!s.note.empty()) os << "<p class=\"note\">" << html_escape(s.note) << "</p>\n";
    for (const auto* c : here)
      os << "<figure class=\"chart\"><figcaption>" << html_escape((*c)["title"].get<std::string>())
         << "</figcaption><div class=\"vega-chart\" id=\"" << (*c)["id"].get<std::string>() << "\"></div></figure>\n";
    for (const auto& t : s.tables) write_table_html(os, t);
    os << "</section>\n";
  }
  os << "</main>\n";

  if (options.assets) {
    json embedded = json::array();
    for (const auto& c : charts) embedded.push_back({{"id", c["id"]}, {"spec", c["spec"]}});
    os << "<script>" << script_text(options.assets->vega) << "</script>\n"
       << "<script>" << script_text(options.assets->vega_lite) << "</script>\n"
       << "<script>" << script_text(options.assets->vega_embed) << "</script>\n"
       << "<script type=\"application/json\" id=\"llmbench-charts\">" << script_json(embedded) << "</script>\n"
       << "<script>" << kDriver << "</script>\n";
  } else {
    os << "<script>window.__chartsMissing = true; window.__chartsTotal = 0; window.__chartsRendered = 0; "
          "window.__chartErrors = []; window.__chartsDone = true;</script>\n";
  }
  os << "</body>\n</html>\n";
  return os.str();
}

std::string render_markdown(const std::vector<ReportInput>& inputs, const std::optional<nlohmann::json>& gate) {
  if (inputs.empty()) throw Error("report: no results to show");
  std::ostringstream os;
  os << "# llmbench report\n\n";
  for (const auto& s : build_sections(inputs, gate)) {
    if (s.tables.empty()) continue;
    os << "## " << s.title << "\n\n";
    if (!s.note.empty()) os << s.note << "\n\n";
    for (const auto& t : s.tables) write_table_md(os, t);
  }
  return os.str();
}

}  // namespace llmbench
