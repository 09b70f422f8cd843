#pragma once
#include <optional>
#include <string>
#include <vector>

#include "llmbench/report/results.h"

namespace llmbench {

enum class Format { table, md, csv, json };

// "table" | "md" | "csv" | "json"; throws UsageError naming the value otherwise.
Format parse_format(const std::string& name);

// Text for one Markdown table cell: `|`, `*`, backquote and `<` escaped, line breaks as spaces.
std::string md_escape(const std::string& text);

// One row per point: model, batch, prompt, new tokens, temperature, attn, dtype, trimmed medians of
// TTFT / output throughput / TPOT / e2e, peak memory, the largest CV, status. One column list drives
// every format; csv and json carry raw numbers (ms, tok/s, bytes), table and md human units.
std::string format_results(const Results& results, Format format);

// One line per (ok run point, metric) whose CV exceeds kCvWarning, for ttft_ms, tpot_ms and e2e_ms. Load
// points are left out: their spread is across requests, not noise between repeated runs.
// A point in words for warnings: "tiny batch 1 prompt 32 new 8 temp 0 eager bfloat16", plus its weights and KV
// cache when quantized ("weights int8", "kv fp8").
std::string point_text(const PointParams& p);

std::vector<std::string> cv_warnings(const Results& results);

// Whether a point failed, which makes the command fail (exit 1). A --search probe whose every request
// failed is an overload the search measured, not a failure, once another probe of its label met the
// objective (else the endpoint may just be wrong).
bool any_point_failed(const Results& results);
bool failure_excused(const Results& results, const PointResult& point);  // the search exception above

// What one label's `load --search` probes found: the highest load that met the goodput target and the
// lowest that missed it.
struct SearchSummary {
  std::string label;
  std::string axis;      // request_rate | concurrency
  double target = 0;     // goodput fraction
  std::string slo;       // "ttft_ms=500,tpot_ms=50"
  std::optional<double> best, lowest_miss;
  double lowest = 0;     // the lowest probe
  int probes = 0;
  bool interrupted = false;  // a probe was cut short (Ctrl-C): it neither met nor missed
};
std::vector<SearchSummary> search_outcomes(const Results& results);
// One line per search: the answer and its bracket (or that none met it, or that the upper bound did).
std::vector<std::string> search_summaries(const Results& results);
// One block per multi-turn load point (--turns): each turn's completed requests, mean prompt tokens, TTFT
// p50 and e2e p50, so a growing history's cost shows (prefix caching: TTFT flat while prompts grow).
std::vector<std::string> turn_summaries(const Results& results);
// One line per load point whose server told how many prompt tokens its prefix cache held
// (usage.prompt_tokens_details.cached_tokens): the share of the prompt tokens, and of how many requests.
std::vector<std::string> prompt_cache_summaries(const Results& results);
// One block per load point with --slice-s: each window's requests, latencies and output tokens per second.
std::vector<std::string> slice_summaries(const Results& results);
// One line per load point with --cancel-rate: how many requests the client abandoned.
std::vector<std::string> cancel_summaries(const Results& results);

// Side by side for `compare`: the same rows plus, when `baseline_label` names a model label, the
// ratio of each metric to the baseline's value at the same point (batch, prompt, ... all but model).
// Load points get ratios of output tok/s and the p50 TTFT, TPOT, ITL and e2e against the baseline's
// load point of the same concurrency or rate, arrival, API, dataset and lengths.
// Throws UsageError when baseline_label is not empty and no point carries that label.
std::string format_comparison(const Results& results, Format format, const std::string& baseline_label);

// One phrase for a point's verification and run consistency, e.g. "ok (256/256 argmax, worst gap 0.00 %)",
// "FAILED: 3 of 256 over 10.00 % (worst 41.20 %)", "off", "not checked (temperature > 0)", plus
// "; runs 3, 7 differ" when timed greedy runs disagreed.
std::string verification_summary(const PointResult& point);

// Quantized points: "int8 vs bfloat16 weights: top-1 98.4 %, logits rel err 1.23e-02, KL 4.56e-04 (256
// positions)" ("fp8 KV vs bfloat16: ..." with an fp8 KV cache); "" without quality figures.
std::string quality_summary(const PointResult& point);

// How a point's matmul weights or KV cache are stored: `format` (params.weights or params.kv_dtype) "bf16" means
// unquantized, at the point's dtype, so it is shown as that dtype ("fp32" for a float32 run, not "bf16"); int8 and
// fp8 as they are. The console table and the report label them alike.
std::string storage_of(const std::string& format, const std::string& dtype);

// `v` with `decimals` digits after the point ("3.14"); %.4g from 1e15 up, where fixed notation is unreadable.
std::string fixed(double v, int decimals);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace llmbench
