// The Vega-Lite specs of `llmbench report`, built as JSON; the page hands them to vega-embed.
#include <algorithm>
#include <cmath>
#include <set>

#include "html_internal.h"
#include "llmbench/base/error.h"
#include "llmbench/stats/stats.h"

namespace llmbench {
namespace {

using nlohmann::json;
using namespace report_detail;

constexpr const char* kSchema = "https://vega.github.io/schema/vega-lite/v6.json";
constexpr int kSubWidth = 250;
constexpr int kSubHeight = 170;

json field(const std::string& name, const std::string& type, const std::string& title = "") {
  json f = {{"field", name}, {"type", type}};
  if (!title.empty()) f["title"] = title;
  return f;
}

json chart(const std::string& section, const std::string& title, json spec) {
  spec["$schema"] = kSchema;
  return {{"section", section}, {"title", title}, {"spec", std::move(spec)}};
}

bool usable(const PointResult& p) { return p.status == "ok" && (!p.runs.empty() || p.load); }
// Sweeps, models, stages, efficiency and cold start describe `llmbench run` points only.
bool usable_run(const PointResult& p) { return usable(p) && !p.load; }

// The file name in front of a title when several files are shown.
std::string prefixed(const std::vector<ReportInput>& inputs, const ReportInput& in, const std::string& s) {
  return inputs.size() > 1 ? in.name + ": " + s : s;
}

// 1234567 as "1,234,567".
std::string grouped(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// ECDF of one metric's raw values with its P50/P90/P99 as vertical rules (from all values). Up to
// kEcdfExactMax values: every value, the browser computes the fractions. Above: the exact ECDF at its
// quantiles (ecdf_quantiles), as a step line with transparent points for the tooltips.
json ecdf(const std::string& title, const std::vector<double>& values, const Summary* s) {
  const bool exact = values.size() <= kEcdfExactMax;
  json data = json::array();
  if (exact) {
    for (double v : values) data.push_back({{"v", v}});
  } else {
    for (const auto& p : ecdf_quantiles(values, kEcdfQuantileSteps)) data.push_back({{"v", p.value}, {"F", p.fraction}});
  }
  double p50, p90, p99;
  if (s && s->n > 0) {
    p50 = s->p50, p90 = s->p90, p99 = s->p99;
  } else {
    p50 = percentile(values, 50), p90 = percentile(values, 90), p99 = percentile(values, 99);
  }
  json marks = json::array({{{"q", "P50"}, {"v", p50}}, {{"q", "P90"}, {"v", p90}}, {{"q", "P99"}, {"v", p99}}});
  json x = field("v", "quantitative", title);
  x["scale"] = {{"zero", false}};
  json fraction_tip = {{"field", "F"}, {"type", "quantitative"}, {"format", ".2f"}};
  if (!exact) fraction_tip.update({{"format", ".4f"}, {"title", "fraction ≤ x"}});
  json line = {
      {"data", {{"values", data}}},
      {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"point", exact ? json(true) : json("transparent")}}},
      {"encoding",
       {{"x", x},
        {"y", {{"field", "F"}, {"type", "quantitative"}, {"title", "fraction ≤ x"}, {"scale", {{"domain", {0, 1}}}}}},
        {"tooltip", json::array({{{"field", "v"}, {"type", "quantitative"}, {"format", ".3f"}, {"title", "ms"}},
                                 fraction_tip})}}}};
  if (exact)
    line["transform"] = json::array({{{"window", json::array({{{"op", "cume_dist"}, {"as", "F"}}})},
                                      {"sort", json::array({{{"field", "v"}}})}}});
  json color = field("q", "nominal", "percentile");
  color["scale"] = {{"domain", {"P50", "P90", "P99"}}, {"range", {"#2ca02c", "#ff7f0e", "#d62728"}}};
  json rules = {{"data", {{"values", marks}}},
                {"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"strokeWidth", 2}}},
                {"encoding",
                 {{"x", field("v", "quantitative")},
                  {"color", color},
                  {"tooltip", json::array({field("q", "nominal"),
                                           {{"field", "v"}, {"type", "quantitative"}, {"format", ".3f"}, {"title", "ms"}}})}}}};
  json heading = exact ? json(title)
                       : json{{"text", title},
                              {"subtitle", cat("ECDF from ", grouped(kEcdfQuantileSteps + 1), " quantiles of ",
                                               grouped(values.size()), " values")}};
  return {{"title", heading}, {"width", kSubWidth}, {"height", kSubHeight}, {"layer", json::array({line, rules})}};
}

void add_distributions(const std::vector<ReportInput>& inputs, const Axes& axes, json& out) {
  const std::pair<const char*, const char*> metrics[] = {
      {"e2e_ms", "e2e ms"}, {"ttft_ms", "TTFT ms"}, {"itl_ms", "ITL ms"}};
  for (const auto& in : inputs) {
    for (const auto& p : in.results.points) {
      if (!usable(p)) continue;
      json parts = json::array();
      bool from_quantiles = false;
      for (const auto& [key, title] : metrics) {
        auto values = raw_values(p, key);
        if (values.empty()) continue;
        from_quantiles = from_quantiles || values.size() > kEcdfExactMax;
        parts.push_back(ecdf(title, values, find_summary(p, key)));
      }
      if (parts.empty()) continue;
      std::string title = prefixed(inputs, in, point_label(p, axes));
      if (from_quantiles)
        title += cat(" (an ECDF of more than ", grouped(kEcdfExactMax), " values is drawn from ",
                     grouped(kEcdfQuantileSteps + 1), " quantiles; P50, P90, P99 from all values)");
      out.push_back(chart("distributions", title, {{"hconcat", parts}}));
    }
  }
}

void add_stages(const std::vector<ReportInput>& inputs, const Axes& axes, json& out) {
  const char* names[] = {"tokenize", "kv_init", "prefill", "decode", "detokenize"};
  json rows = json::array();
  for (const auto& in : inputs) {
    for (const auto& p : in.results.points) {
      if (!usable_run(p)) continue;
      const Stages& s = p.stages;
      const double ms[] = {s.tokenize_ms, s.kv_init_ms, s.prefill_ms, s.decode_ms, s.detokenize_ms};
      const std::string label = prefixed(inputs, in, point_label(p.params, axes));
      for (int i = 0; i < 5; ++i) rows.push_back({{"point", label}, {"stage", names[i]}, {"order", i}, {"ms", ms[i]}});
    }
  }
  if (rows.empty()) return;
  json color = field("stage", "nominal", "stage");
  color["scale"] = {{"domain", json(std::vector<std::string>(names, names + 5))}};
  json spec = {
      {"data", {{"values", rows}}},
      {"width", 640},
      {"mark", "bar"},
      {"encoding",
       {{"y", {{"field", "point"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}}},
        {"x", {{"field", "ms"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", "ms (trimmed median per stage)"}}},
        {"color", color},
        {"order", field("order", "quantitative")},
        {"tooltip", json::array({field("point", "nominal"), field("stage", "nominal"),
                                 {{"field", "ms"}, {"type", "quantitative"}, {"format", ".3f"}}})}}}};
  out.push_back(chart("stages", "Stage breakdown", spec));
}

// One bar chart per metric, grouped by `group`, one bar per `bar` value (coloured).
json grouped_bars(const json& rows, const std::vector<std::string>& metrics, const std::string& group,
                  const std::string& bar, const std::vector<std::string>& bar_domain) {
  json parts = json::array();
  for (const auto& m : metrics) {
    json color = field(bar, "nominal");
    color["scale"] = {{"domain", bar_domain}};
    parts.push_back(
        {{"title", m},
         {"width", {{"step", 18}}},
         {"height", kSubHeight},
         {"transform", json::array({{{"filter", {{"field", "metric"}, {"equal", m}}}}})},
         {"mark", "bar"},
         {"encoding",
          {{"x", {{"field", group}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}}},
           {"xOffset", {{"field", bar}, {"type", "nominal"}, {"sort", bar_domain}}},
           {"y", {{"field", "value"}, {"type", "quantitative"}, {"title", m}}},
           {"color", color},
           {"tooltip", json::array({field(group, "nominal"), field(bar, "nominal"),
                                    {{"field", "value"}, {"type", "quantitative"}, {"format", ".3f"}}})}}}});
  }
  return {{"data", {{"values", rows}}}, {"concat", parts}, {"columns", 2}};
}

const std::vector<std::pair<std::string, std::string>> kHeadlineMetrics = {
    {"ttft_ms", "TTFT ms"}, {"tpot_ms", "TPOT ms"}, {"e2e_ms", "e2e ms"}, {"output_tok_s", "output tok/s"}};

std::vector<std::string> headline_titles() {
  std::vector<std::string> t;
  for (const auto& m : kHeadlineMetrics) t.push_back(m.second);
  return t;
}

void add_models(const std::vector<ReportInput>& inputs, json& out) {
  for (const auto& in : inputs) {
    Axes axes = varying_axes(in.results);
    if (!axes.model) continue;
    json rows = json::array();
    std::vector<std::string> models;
    for (const auto& p : in.results.points) {
      if (!usable_run(p)) continue;
      const std::string model = model_label(p.params);
      if (std::find(models.begin(), models.end(), model) == models.end()) models.push_back(model);
      for (const auto& [key, title] : kHeadlineMetrics) {
        double v = headline(p, key);
        if (std::isnan(v)) continue;
        rows.push_back({{"model", model}, {"config", point_label(p.params, axes, false)}, {"metric", title}, {"value", v}});
      }
    }
    if (models.size() < 2) continue;
    out.push_back(chart("models", prefixed(inputs, in, "Models compared"),
                        grouped_bars(rows, headline_titles(), "config", "model", models)));
  }
}

// Label of the sweep line a point belongs to: the model and every other varying axis but `skip`.
std::string series_label(const PointParams& p, Axes axes, const std::string& skip) {
  if (skip == "batch") axes.batch = false;
  if (skip == "prompt_len") axes.prompt_len = false;
  if (skip == "max_new_tokens") axes.max_new_tokens = false;
  if (skip == "temperature") axes.temperature = false;
  std::string s = model_label(p);
  if (axes.batch) s += " b=" + std::to_string(p.batch);
  if (axes.prompt_len) s += " p=" + std::to_string(p.prompt_len);
  if (axes.max_new_tokens) s += " n=" + std::to_string(p.max_new_tokens);
  if (axes.temperature) s += " T=" + fmt_param(p.temperature);
  if (axes.dtype) s += " " + p.dtype;
  if (axes.attn) s += " " + p.attn;
  if (axes.device) s += " " + p.device;
  return s;
}

double axis_value(const PointParams& p, const std::string& axis) {
  if (axis == "batch") return p.batch;
  if (axis == "prompt_len") return p.prompt_len;
  if (axis == "max_new_tokens") return p.max_new_tokens;
  return p.temperature;
}

void add_sweeps(const std::vector<ReportInput>& inputs, json& out) {
  const std::pair<const char*, const char*> sweep_axes[] = {
      {"batch", "batch"}, {"prompt_len", "prompt length"}, {"max_new_tokens", "new tokens"}, {"temperature", "temperature"}};
  for (const auto& in : inputs) {
    Axes axes = varying_axes(in.results);
    for (const auto& [axis, axis_title] : sweep_axes) {
      std::set<double> xs;
      std::vector<std::string> series;
      json rows = json::array();
      for (const auto& p : in.results.points) {
        if (!usable_run(p)) continue;
        xs.insert(axis_value(p.params, axis));
        const std::string name = series_label(p.params, axes, axis);
        if (std::find(series.begin(), series.end(), name) == series.end()) series.push_back(name);
        for (const char* key : {"output_tok_s", "tpot_ms"}) {
          double v = headline(p, key);
          if (std::isnan(v)) continue;
          rows.push_back({{"x", axis_value(p.params, axis)},
                          {"series", name},
                          {"metric", key},
                          {"value", v}});
        }
      }
      if (xs.size() < 2) continue;
      json x = {{"field", "x"}, {"type", "quantitative"}, {"title", axis_title}, {"scale", {{"zero", false}}},
                {"axis", {{"values", std::vector<double>(xs.begin(), xs.end())}}}};
      if (std::string(axis) == "batch" && *xs.begin() > 0) x["scale"] = {{"type", "log"}, {"base", 2}};
      json color = field("series", "nominal", "series");
      color["scale"] = {{"domain", series}};
      json parts = json::array();
      for (const auto& [key, title] : {std::pair<const char*, const char*>{"output_tok_s", "output tok/s"},
                                       std::pair<const char*, const char*>{"tpot_ms", "TPOT ms"}}) {
        parts.push_back(
            {{"title", std::string(title) + " vs " + axis_title},
             {"width", kSubWidth + 60},
             {"height", kSubHeight + 30},
             {"transform", json::array({{{"filter", {{"field", "metric"}, {"equal", key}}}}})},
             {"mark", {{"type", "line"}, {"point", true}}},
             {"encoding",
              {{"x", x},
               {"y", {{"field", "value"}, {"type", "quantitative"}, {"title", title}}},
               {"color", color},
               {"tooltip", json::array({field("series", "nominal"), {{"field", "x"}, {"type", "quantitative"}, {"title", axis_title}},
                                        {{"field", "value"}, {"type", "quantitative"}, {"format", ".3f"}, {"title", title}}})}}}});
      }
      out.push_back(chart("sweeps", prefixed(inputs, in, std::string("Sweep over ") + axis_title),
                          {{"data", {{"values", rows}}}, {"hconcat", parts}}));
    }
  }
}

// Horizontal bars, one row per point, one bar per `kind` (coloured).
json point_bars(const json& rows, const std::string& x_title, const std::vector<std::string>& kinds) {
  json color = field("kind", "nominal");
  color["title"] = nullptr;
  color["scale"] = {{"domain", kinds}};
  return {{"data", {{"values", rows}}},
          {"width", 560},
          {"mark", "bar"},
          {"encoding",
           {{"y", {{"field", "point"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}}},
            {"yOffset", {{"field", "kind"}, {"type", "nominal"}, {"sort", kinds}}},
            {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", x_title}}},
            {"color", color},
            {"tooltip", json::array({field("point", "nominal"), field("kind", "nominal"),
                                     {{"field", "value"}, {"type", "quantitative"}, {"format", ".3f"}}})}}}};
}

void add_efficiency(const std::vector<ReportInput>& inputs, const Axes& axes, json& out) {
  json rows = json::array();
  for (const auto& in : inputs) {
    for (const auto& p : in.results.points) {
      if (!usable_run(p)) continue;
      const std::string label = prefixed(inputs, in, point_label(p.params, axes));
      if (p.roofline.mbu) rows.push_back({{"point", label}, {"kind", "MBU (decode)"}, {"value", *p.roofline.mbu * 100}});
      if (p.roofline.mfu) rows.push_back({{"point", label}, {"kind", "MFU (prefill)"}, {"value", *p.roofline.mfu * 100}});
    }
  }
  if (rows.empty()) return;
  out.push_back(chart("efficiency", "MBU and MFU",
                      point_bars(rows, "% of the measured ceiling", {"MBU (decode)", "MFU (prefill)"})));
}

void add_cold(const std::vector<ReportInput>& inputs, const Axes& axes, json& out) {
  json rows = json::array();
  for (const auto& in : inputs) {
    for (const auto& p : in.results.points) {
      if (!usable_run(p) || p.cold.first_generate_ms <= 0) continue;
      const std::string label = prefixed(inputs, in, point_label(p.params, axes));
      rows.push_back({{"point", label}, {"kind", "cold: first generate"}, {"value", p.cold.first_generate_ms}});
      double warm = headline(p, "e2e_ms");
      if (!std::isnan(warm)) rows.push_back({{"point", label}, {"kind", "warm: e2e"}, {"value", warm}});
    }
  }
  if (rows.empty()) return;
  out.push_back(chart("cold", "Cold versus warm", point_bars(rows, "ms", {"cold: first generate", "warm: e2e"})));
}

void add_files(const std::vector<ReportInput>& inputs, const Axes& axes, json& out) {
  if (inputs.size() < 2) return;
  json rows = json::array();
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    files.push_back(in.name);
    for (const auto& p : in.results.points) {
      if (!usable(p)) continue;
      for (const auto& [key, title] : kHeadlineMetrics) {
        double v = headline(p, key);
        if (std::isnan(v)) continue;
        rows.push_back({{"point", point_label(p, axes)}, {"file", in.name}, {"metric", title}, {"value", v}});
      }
    }
  }
  if (rows.empty()) return;
  out.push_back(chart("files", "Files side by side", grouped_bars(rows, headline_titles(), "point", "file", files)));
}

// llmbench load: latency percentiles against achieved output throughput across each sweep.
void add_load(const std::vector<ReportInput>& inputs, json& out) {
  json rows = json::array();
  for (const auto& in : inputs) {
    for (const auto& p : in.results.points) {
      if (!p.load || p.status != "ok") continue;
      // A whole response (--no-stream) has only its e2e: a series of its own, in the e2e panels alone.
      const std::string series = prefixed(inputs, in, model_label(p.params)) + (p.load->stream ? "" : " (no-stream)");
      const std::string at = is_trace_replay(*p.load)    ? cat(p.load->arrival, " replay")
                             : p.load->request_rate > 0 ? cat(p.load->request_rate, " req/s offered")
                                                        : cat("concurrency ", p.load->concurrency);
      for (const auto& [metric, name] : {std::pair<std::string, std::string>{"ttft_ms", "TTFT"},
                                         {"tpot_ms", "TPOT"}, {"itl_ms", "ITL"}, {"e2e_ms", "e2e"}}) {
        const Summary* s = find_summary(p, metric);
        if (!s) continue;
        for (const auto& [q, v] : {std::pair<std::string, double>{"p50", s->p50}, {"p99", s->p99}})
          rows.push_back({{"series", series}, {"at", at}, {"metric", name + " " + q},
                          {"throughput", p.load->output_tokens_per_s}, {"ms", v}});
      }
    }
  }
  if (rows.empty()) return;
  json spec = {
      {"name", "load-latency-throughput"},
      {"data", {{"values", rows}}},
      {"facet", {{"field", "metric"}, {"type", "nominal"}, {"title", nullptr},
                 {"sort", {"TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p50", "ITL p99", "e2e p50", "e2e p99"}}}},
      {"columns", 2},
      {"resolve", {{"scale", {{"y", "independent"}}}}},
      {"spec",
       {{"width", kSubWidth},
        {"height", kSubHeight},
        {"mark", {{"type", "line"}, {"point", true}}},
        {"encoding",
         {{"x", field("throughput", "quantitative", "output tokens/s")},
          {"y", field("ms", "quantitative", "ms")},
          {"color", field("series", "nominal", "")},
          {"order", field("throughput", "quantitative")},
          {"tooltip", json::array({field("series", "nominal"), field("at", "nominal"), field("metric", "nominal"),
                                   {{"field", "ms"}, {"type", "quantitative"}, {"format", ".2f"}},
                                   {{"field", "throughput"}, {"type", "quantitative"}, {"format", ".1f"}}})}}}}}};
  out.push_back(chart("load", "Latency against throughput", spec));
}

}  // namespace

nlohmann::json chart_specs(const std::vector<ReportInput>& inputs) {
  const Axes axes = varying_axes(inputs);
  json out = json::array();
  add_files(inputs, axes, out);
  add_load(inputs, out);
  add_sweeps(inputs, out);
  add_models(inputs, out);
  add_stages(inputs, axes, out);
  add_efficiency(inputs, axes, out);
  add_cold(inputs, axes, out);
  add_distributions(inputs, axes, out);
  for (std::size_t i = 0; i < out.size(); ++i) out[i]["id"] = "chart-" + std::to_string(i);
  return out;
}

}  // namespace llmbench
