#pragma once
// Helpers shared by the report's page (html.cpp) and its chart specs (html_charts.cpp).
#include <string>
#include <vector>

#include "llmbench/report/html.h"

namespace llmbench::report_detail {

// Which sweep axes take more than one value over all run points of all inputs; the load_ ones over
// all `llmbench load` points.
struct Axes {
  bool model = false, dtype = false, attn = false, batch = false, prompt_len = false,
       max_new_tokens = false, temperature = false, device = false, weights = false,
       kv_dtype = false;
  bool load_lengths = false, load_api = false;
};

Axes varying_axes(const std::vector<ReportInput>& inputs);
Axes varying_axes(const Results& results);

std::string model_label(const PointParams& p);
// "model b=4 p=512 n=64" plus the other axes that vary; `with_model` false drops the model.
std::string point_label(const PointParams& p, const Axes& axes, bool with_model = true);
// A load point: "model c=16" or "model rate=4/s poisson" (plus lengths or API when they vary); a run
// point as above.
std::string point_label(const PointResult& p, const Axes& axes, bool with_model = true);
// Identity of a point across files: every axis, whether or not it varies (a load point: its
// concurrency or rate, arrival, API, dataset and lengths).
std::string point_key(const PointParams& p);
std::string point_key(const PointResult& p);

// The summary of `metric`, or nullptr when the point has none (failed, or n == 0).
const Summary* find_summary(const PointResult& point, const std::string& metric);
// Trimmed median of `metric`; NaN when absent. A load point's output_tok_s is its achieved throughput.
double headline(const PointResult& point, const std::string& metric);

// Raw per-run values: "e2e_ms", "ttft_ms", "tpot_ms", "prefill_ms", or "itl_ms" (all runs pooled).
std::vector<double> raw_values(const PointResult& point, const std::string& metric);

// Short, fixed-width-friendly number: 1234, 123.4, 12.34, 1.234, 0.1234; "–" for NaN.
std::string fmt_num(double v);
// A run parameter (temperature, top-p) as given: shortest form, 0.2 and 1 rather than 0.2000 and 1.000.
std::string fmt_param(double v);
std::string fmt_bytes(std::uint64_t bytes);

}  // namespace llmbench::report_detail
