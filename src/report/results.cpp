#include "llmbench/report/results.h"

#include <algorithm>


#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"

namespace llmbench {

using nlohmann::json;

// ---------------------------------------------------------------- summaries

const std::vector<std::string>& summary_metrics() {
  static const std::vector<std::string> names = {"ttft_ms",      "prefill_ms",   "tpot_ms",      "e2e_ms",
                                                 "itl_ms",       "output_tok_s", "decode_tok_s", "prefill_tok_s"};
  return names;
}

std::vector<double> metric_values(const PointResult& point, const std::string& metric) {
  const double b = point.params.batch;
  const double n = point.params.max_new_tokens;
  const double p = point.params.prompt_len;
  const auto& known = summary_metrics();
  if (std::find(known.begin(), known.end(), metric) == known.end()) throw Error(cat("unknown metric '", metric, "'"));
  if (point.load) return load_metric_values(*point.load, metric);
  std::vector<double> out;
  for (const auto& r : point.runs) {
    if (metric == "ttft_ms") out.push_back(r.ttft_ms);
    else if (metric == "prefill_ms") out.push_back(r.prefill_ms);
    else if (metric == "tpot_ms") { if (n > 1) out.push_back(r.tpot_ms); }
    else if (metric == "e2e_ms") out.push_back(r.e2e_ms);
    else if (metric == "itl_ms") out.insert(out.end(), r.itl_ms.begin(), r.itl_ms.end());
    else if (metric == "output_tok_s") { if (r.e2e_ms > 0) out.push_back(b * n / (r.e2e_ms / 1e3)); }
    else if (metric == "decode_tok_s") { if (n > 1 && r.tpot_ms > 0) out.push_back(b / (r.tpot_ms / 1e3)); }
    else if (metric == "prefill_tok_s") { if (r.prefill_ms > 0) out.push_back(b * p / (r.prefill_ms / 1e3)); }
  }
  return out;
}

void summarize_point(PointResult& point) {
  point.summary.clear();
  point.stages = {};
  if (point.load) {
    summarize_load(*point.load);
    for (const auto& metric : load_summary_metrics()) {
      std::vector<double> values = load_metric_values(*point.load, metric);
      if (!values.empty()) point.summary[metric] = summarize(values, point.trim);
    }
    return;
  }
  if (point.runs.empty()) return;
  for (const auto& metric : summary_metrics()) {
    std::vector<double> values = metric_values(point, metric);
    if (!values.empty()) point.summary[metric] = summarize(values, point.trim);
  }
  auto stage = [&](double RunRecord::*field) {
    std::vector<double> values;
    for (const auto& r : point.runs) values.push_back(r.*field);
    return trimmed_median(values, point.trim);
  };
  point.stages.tokenize_ms = stage(&RunRecord::tokenize_ms);
  point.stages.kv_init_ms = stage(&RunRecord::kv_init_ms);
  point.stages.prefill_ms = stage(&RunRecord::prefill_ms);
  point.stages.decode_ms = stage(&RunRecord::decode_ms);
  point.stages.detokenize_ms = stage(&RunRecord::detokenize_ms);
}

void clear_engine_params(PointParams& params) {
  params.attn = params.dtype = params.weights = params.kv_dtype = params.fp8_gemm = "";
  params.cuda_graph = params.fused = params.gemv = false;
  params.tp = 0;
}

// ---------------------------------------------------------------- writing

namespace {

json to_json(const PointParams& p) {
  return {{"model", p.model},     {"label", p.label},
          {"batch", p.batch},     {"prompt_len", p.prompt_len},
          {"max_new_tokens", p.max_new_tokens},
          {"temperature", p.temperature},
          {"attn", p.attn},       {"dtype", p.dtype},
          {"top_k", p.top_k},     {"top_p", p.top_p},
          {"seed", p.seed},       {"device", p.device},
          {"cuda_graph", p.cuda_graph},
          {"fused", p.fused},
          {"weights", p.weights},
          {"kv_dtype", p.kv_dtype},
          {"gemv", p.gemv},
          {"fp8_gemm", p.fp8_gemm},
          {"tp", p.tp}};
}

json to_json(const RunRecord& r) {
  return {{"ttft_ms", r.ttft_ms},         {"prefill_ms", r.prefill_ms},   {"tpot_ms", r.tpot_ms},
          {"e2e_ms", r.e2e_ms},           {"itl_ms", r.itl_ms},           {"tokenize_ms", r.tokenize_ms},
          {"kv_init_ms", r.kv_init_ms},   {"decode_ms", r.decode_ms},     {"detokenize_ms", r.detokenize_ms}};
}

json to_json(const Summary& s) {
  return {{"n", s.n},       {"mean", s.mean}, {"std", s.std},   {"min", s.min},
          {"max", s.max},   {"p50", s.p50},   {"p90", s.p90},   {"p95", s.p95},
          {"p99", s.p99},   {"trimmed_median", s.trimmed_median},
          {"ci95", {s.ci95_lo, s.ci95_hi}},   {"cv", s.cv}};
}

json to_json(const Outputs& o) {
  return {{"first_run_ids", o.first_run_ids},
          {"consistent", o.consistent ? json(*o.consistent) : json(nullptr)},
          {"inconsistent_runs", o.inconsistent_runs}};
}

json to_json(const std::optional<Verification>& v) {
  if (!v) return nullptr;
  return {{"reference", v->reference},       {"tokens", v->tokens},
          {"argmax_equal", v->argmax_equal}, {"worst_gap", v->worst_gap},
          {"over_tolerance", v->over_tolerance}, {"tolerance", v->tolerance},
          {"ok", v->ok}};
}

json to_json(const std::optional<Quality>& q) {
  if (!q) return nullptr;
  return {{"reference", q->reference},           {"positions", q->positions},
          {"logits_rel_err", q->logits_rel_err}, {"top1_agreement", q->top1_agreement},
          {"kl_divergence_mean", q->kl_divergence_mean}};
}

json to_json(const std::optional<TensorParallel>& t) {
  if (!t) return nullptr;
  return {{"size", t->size},
          {"backend", t->backend},
          {"devices", t->devices},
          {"weights_bytes", t->weights_bytes},
          {"peak_allocated_bytes", t->peak_allocated_bytes},
          {"peak_rss_bytes", t->peak_rss_bytes},
          {"allreduce_ms_per_step", optional_number(t->allreduce_ms_per_step)},
          {"allreduce_method", t->allreduce_method}};
}

json to_json(const PointResult& p) {
  json summary = json::object();
  for (const auto& [metric, s] : p.summary) summary[metric] = to_json(s);
  json runs = json::array();
  for (const auto& r : p.runs) runs.push_back(to_json(r));
  json j = {
      {"params", to_json(p.params)},
      {"status", p.status},
      {"error", p.error},
      {"weights", p.weights},
      {"checkpoint", p.checkpoint},
      {"prompt_source", p.prompt_source},
      {"tokenizer", p.tokenizer},
      {"paths", p.paths},
      {"warmup", p.warmup},
      {"trim", p.trim},
      {"runs", runs},
      {"summary", summary},
      {"stages",
       {{"tokenize_ms", p.stages.tokenize_ms},
        {"kv_init_ms", p.stages.kv_init_ms},
        {"prefill_ms", p.stages.prefill_ms},
        {"decode_ms", p.stages.decode_ms},
        {"detokenize_ms", p.stages.detokenize_ms}}},
      {"memory",
       {{"peak_allocated_bytes", p.memory.peak_allocated_bytes},
        {"peak_reserved_bytes", p.memory.peak_reserved_bytes},
        {"device_in_use_bytes", p.memory.device_in_use_bytes},
        {"weights_bytes", p.memory.weights_bytes},
        {"kv_cache_bytes", p.memory.kv_cache_bytes},
        {"peak_rss_bytes", p.memory.peak_rss_bytes}}},
      {"cold", {{"load_ms", p.cold.load_ms}, {"first_generate_ms", p.cold.first_generate_ms}}},
      {"roofline",
       {{"mbu", optional_number(p.roofline.mbu)},
        {"mfu", optional_number(p.roofline.mfu)},
        {"decode_bytes_per_step", p.roofline.decode_bytes_per_step},
        {"prefill_flops", p.roofline.prefill_flops}}},
      {"mode", p.mode},
      {"outputs", to_json(p.outputs)},
      {"verification", to_json(p.verification)},
      {"quality", to_json(p.quality)},
      {"tensor_parallel", to_json(p.tensor_parallel)},
  };
  if (p.load) j.update(load_to_json(*p.load));
  return j;
}

}  // namespace

json to_json(const Results& r) {
  json points = json::array();
  for (const auto& p : r.points) points.push_back(to_json(p));
  return {{"schema_version", r.schema_version},
          {"created_at", r.created_at},
          {"command", r.command},
          {"interrupted", r.interrupted},
          {"env", to_json(r.env)},
          {"points", points}};
}

// ---------------------------------------------------------------- reading

namespace {

const char* type_name(const json& j) { return j.type_name(); }

// A JSON object together with its path ("points[2].runs[0]"), for error messages.
class Node {
 public:
  Node(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  const json& get() const { return j_; }
  const std::string& path() const { return path_; }

  std::string child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  Node object(const std::string& key) const { return typed(key, json::value_t::object, "an object"); }
  Node array(const std::string& key) const { return typed(key, json::value_t::array, "an array"); }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  double number(const std::string& key) const { return as_number(at(key), child_path(key)); }
  // A duration or a count: a negative one is a corrupt file, not a measurement (the gate took -1 ms for a gain).
  double non_negative(const std::string& key) const { return check_non_negative(number(key), child_path(key)); }
  static double check_non_negative(double v, const std::string& path) {
    if (!(v >= 0)) throw Error(cat(path, ": expected a number >= 0, got ", v));
    return v;
  }
  long long integer(const std::string& key) const { return as_integer(at(key), child_path(key)); }
  long long non_negative_integer(const std::string& key) const {
    const long long i = integer(key);
    if (i < 0) throw Error(cat(child_path(key), ": expected a non-negative integer, got ", i));
    return i;
  }
  std::uint64_t unsigned_integer(const std::string& key) const {
    const json& v = at(key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    const long long i = as_integer(v, child_path(key));
    if (i < 0) throw Error(cat(child_path(key), ": expected a non-negative integer, got ", i));
    return static_cast<std::uint64_t>(i);
  }
  std::string string(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) throw Error(cat(child_path(key), ": expected a string, got ", type_name(v)));
    return v.get<std::string>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) throw Error(cat(child_path(key), ": expected true or false, got ", type_name(v)));
    return v.get<bool>();
  }

  // Optional keys: left at their default when absent, type-checked when present.
  void opt(const std::string& key, double& out) const { if (has(key)) out = number(key); }
  void opt(const std::string& key, int& out) const { if (has(key)) out = static_cast<int>(integer(key)); }
  void opt(const std::string& key, std::uint64_t& out) const { if (has(key)) out = unsigned_integer(key); }
  void opt(const std::string& key, std::string& out) const { if (has(key)) out = string(key); }
  void opt(const std::string& key, bool& out) const { if (has(key)) out = boolean(key); }

  static double as_number(const json& v, const std::string& path) {
    if (!v.is_number()) throw Error(cat(path, ": expected a number, got ", type_name(v)));
    return v.get<double>();
  }
  static long long as_integer(const json& v, const std::string& path) {
    if (!v.is_number_integer()) throw Error(cat(path, ": expected an integer, got ", type_name(v)));
    return v.get<long long>();
  }

 private:
  const json& at(const std::string& key) const {
    if (!j_.contains(key)) throw Error(cat(child_path(key), ": missing"));
    return j_.at(key);
  }
  Node typed(const std::string& key, json::value_t type, const char* what) const {
    const json& v = at(key);
    if (v.type() != type) throw Error(cat(child_path(key), ": expected ", what, ", got ", type_name(v)));
    return Node(v, child_path(key));
  }

  const json& j_;
  std::string path_;
};

std::string index_path(const Node& array, std::size_t i) { return cat(array.path(), "[", i, "]"); }

Node element_object(const Node& array, std::size_t i) {
  const json& v = array.get()[i];
  if (!v.is_object()) throw Error(cat(index_path(array, i), ": expected an object, got ", type_name(v)));
  return Node(v, index_path(array, i));
}

PointParams params_from(const Node& n) {
  PointParams p;
  p.model = n.string("model");
  n.opt("label", p.label);
  p.batch = static_cast<int>(n.non_negative_integer("batch"));
  p.prompt_len = static_cast<int>(n.non_negative_integer("prompt_len"));
  p.max_new_tokens = static_cast<int>(n.non_negative_integer("max_new_tokens"));
  p.temperature = n.number("temperature");
  p.attn = n.string("attn");
  p.dtype = n.string("dtype");
  n.opt("top_k", p.top_k);
  n.opt("top_p", p.top_p);
  n.opt("seed", p.seed);
  n.opt("device", p.device);
  n.opt("cuda_graph", p.cuda_graph);
  n.opt("fused", p.fused);
  n.opt("weights", p.weights);
  n.opt("kv_dtype", p.kv_dtype);
  n.opt("gemv", p.gemv);
  n.opt("fp8_gemm", p.fp8_gemm);
  n.opt("tp", p.tp);
  return p;
}

RunRecord run_from(const Node& n) {
  RunRecord r;
  r.ttft_ms = n.non_negative("ttft_ms");
  r.prefill_ms = n.non_negative("prefill_ms");
  r.tpot_ms = n.non_negative("tpot_ms");
  r.e2e_ms = n.non_negative("e2e_ms");
  Node itl = n.array("itl_ms");
  for (std::size_t i = 0; i < itl.get().size(); ++i)
    r.itl_ms.push_back(Node::check_non_negative(Node::as_number(itl.get()[i], index_path(itl, i)), index_path(itl, i)));
  for (auto [key, field] : {std::pair{"tokenize_ms", &RunRecord::tokenize_ms}, {"kv_init_ms", &RunRecord::kv_init_ms},
                            {"decode_ms", &RunRecord::decode_ms}, {"detokenize_ms", &RunRecord::detokenize_ms}})
    if (n.has(key)) r.*field = n.non_negative(key);
  return r;
}

Summary summary_from(const Node& n) {
  Summary s;
  s.n = static_cast<int>(n.integer("n"));
  s.mean = n.number("mean");
  s.std = n.number("std");
  s.min = n.number("min");
  s.max = n.number("max");
  s.p50 = n.number("p50");
  s.p90 = n.number("p90");
  s.p95 = n.number("p95");
  s.p99 = n.number("p99");
  s.trimmed_median = n.number("trimmed_median");
  Node ci = n.array("ci95");
  if (ci.get().size() != 2) throw Error(cat(ci.path(), ": expected [lo, hi], got ", ci.get().size(), " values"));
  s.ci95_lo = Node::as_number(ci.get()[0], index_path(ci, 0));
  s.ci95_hi = Node::as_number(ci.get()[1], index_path(ci, 1));
  s.cv = n.number("cv");
  return s;
}

PointResult point_from(const Node& n) {
  PointResult p;
  p.params = params_from(n.object("params"));
  p.status = n.string("status");
  if (p.status != "ok" && p.status != "failed" && p.status != "skipped" && p.status != "interrupted")
    throw Error(cat(n.child_path("status"), ": expected ok, failed, skipped or interrupted, got '", p.status, "'"));
  n.opt("error", p.error);
  n.opt("weights", p.weights);
  if (p.weights != "random" && p.weights != "checkpoint" && p.weights != "unknown")
    throw Error(cat(n.child_path("weights"), ": expected random, checkpoint or unknown, got '", p.weights, "'"));
  n.opt("checkpoint", p.checkpoint);
  n.opt("prompt_source", p.prompt_source);
  n.opt("tokenizer", p.tokenizer);
  if (n.has("paths")) {
    Node paths = n.object("paths");
    for (const auto& [k, v] : paths.get().items()) p.paths[k] = paths.boolean(k);
  }
  n.opt("warmup", p.warmup);
  n.opt("trim", p.trim);
  Node runs = n.array("runs");
  for (std::size_t i = 0; i < runs.get().size(); ++i) p.runs.push_back(run_from(element_object(runs, i)));
  if (n.has("summary")) {
    Node summary = n.object("summary");
    for (const auto& [metric, v] : summary.get().items()) p.summary[metric] = summary_from(summary.object(metric));
  }
  if (n.has("stages")) {
    Node s = n.object("stages");
    s.opt("tokenize_ms", p.stages.tokenize_ms);
    s.opt("kv_init_ms", p.stages.kv_init_ms);
    s.opt("prefill_ms", p.stages.prefill_ms);
    s.opt("decode_ms", p.stages.decode_ms);
    s.opt("detokenize_ms", p.stages.detokenize_ms);
  }
  if (n.has("memory")) {
    Node m = n.object("memory");
    m.opt("peak_allocated_bytes", p.memory.peak_allocated_bytes);
    m.opt("peak_reserved_bytes", p.memory.peak_reserved_bytes);
    m.opt("device_in_use_bytes", p.memory.device_in_use_bytes);
    m.opt("weights_bytes", p.memory.weights_bytes);
    m.opt("kv_cache_bytes", p.memory.kv_cache_bytes);
    m.opt("peak_rss_bytes", p.memory.peak_rss_bytes);
  }
  if (n.has("cold")) {
    Node c = n.object("cold");
    c.opt("load_ms", p.cold.load_ms);
    c.opt("first_generate_ms", p.cold.first_generate_ms);
  }
  if (n.has("roofline")) {
    Node r = n.object("roofline");
    if (r.has("mbu")) p.roofline.mbu = r.number("mbu");
    if (r.has("mfu")) p.roofline.mfu = r.number("mfu");
    r.opt("decode_bytes_per_step", p.roofline.decode_bytes_per_step);
    r.opt("prefill_flops", p.roofline.prefill_flops);
  }
  n.opt("mode", p.mode);
  if (p.mode == "load") {
    p.load = load_from_json(n.get(), n.path());
    clear_engine_params(p.params);
  } else if (p.mode != "run")
    throw Error(cat(n.child_path("mode"), ": expected run or load, got '", p.mode, "'"));
  if (n.has("outputs")) {
    Node o = n.object("outputs");
    if (o.has("first_run_ids")) {
      Node rows = o.array("first_run_ids");
      for (std::size_t i = 0; i < rows.get().size(); ++i) {
        const json& row = rows.get()[i];
        if (!row.is_array()) throw Error(cat(index_path(rows, i), ": expected an array, got ", type_name(row)));
        std::vector<std::int64_t> ids;
        for (std::size_t k = 0; k < row.size(); ++k) ids.push_back(Node::as_integer(row[k], cat(index_path(rows, i), "[", k, "]")));
        p.outputs.first_run_ids.push_back(std::move(ids));
      }
    }
    if (o.has("consistent")) p.outputs.consistent = o.boolean("consistent");
    if (o.has("inconsistent_runs")) {
      Node runs = o.array("inconsistent_runs");
      for (std::size_t i = 0; i < runs.get().size(); ++i)
        p.outputs.inconsistent_runs.push_back(static_cast<int>(Node::as_integer(runs.get()[i], index_path(runs, i))));
    }
  }
  if (n.has("tensor_parallel")) {
    Node t = n.object("tensor_parallel");
    TensorParallel tp;
    tp.size = static_cast<int>(t.integer("size"));
    t.opt("backend", tp.backend);
    auto strings = [&](const char* key, std::vector<std::string>& out) {
      if (!t.has(key)) return;
      Node a = t.array(key);
      for (std::size_t i = 0; i < a.get().size(); ++i) {
        if (!a.get()[i].is_string()) throw Error(cat(index_path(a, i), ": expected a string, got ", type_name(a.get()[i])));
        out.push_back(a.get()[i].get<std::string>());
      }
    };
    auto counts = [&](const char* key, std::vector<std::uint64_t>& out) {
      if (!t.has(key)) return;
      Node a = t.array(key);
      for (std::size_t i = 0; i < a.get().size(); ++i)
        out.push_back(static_cast<std::uint64_t>(Node::as_integer(a.get()[i], index_path(a, i))));
    };
    strings("devices", tp.devices);
    counts("weights_bytes", tp.weights_bytes);
    counts("peak_allocated_bytes", tp.peak_allocated_bytes);
    counts("peak_rss_bytes", tp.peak_rss_bytes);
    if (t.has("allreduce_ms_per_step"))
      tp.allreduce_ms_per_step = t.number("allreduce_ms_per_step");
    t.opt("allreduce_method", tp.allreduce_method);
    p.tensor_parallel = tp;
  }
  if (n.has("verification")) {
    Node v = n.object("verification");
    Verification ver;
    ver.reference = v.string("reference");
    ver.tokens = v.integer("tokens");
    ver.argmax_equal = v.integer("argmax_equal");
    ver.worst_gap = v.number("worst_gap");
    ver.over_tolerance = v.integer("over_tolerance");
    v.opt("tolerance", ver.tolerance);
    ver.ok = v.boolean("ok");
    p.verification = ver;
  }
  if (n.has("quality")) {
    Node q = n.object("quality");
    Quality qu;
    qu.reference = q.string("reference");
    qu.positions = q.integer("positions");
    qu.logits_rel_err = q.number("logits_rel_err");
    qu.top1_agreement = q.number("top1_agreement");
    qu.kl_divergence_mean = q.number("kl_divergence_mean");
    p.quality = qu;
  }
  // A file with runs but no summary (written by hand or by another tool): the summary is computed from the
  // runs, as the schema promises it can be, so that report shows what gate judges.
  if (!n.has("summary") && !p.load && !p.runs.empty()) {
    const auto stages = p.stages;
    summarize_point(p);
    if (n.has("stages")) p.stages = stages;
  }
  return p;
}

}  // namespace

Results results_from_json(const json& j) {
  if (!j.is_object()) throw Error(cat("expected a JSON object at the top level, got ", type_name(j)));
  Node root(j, "");
  if (!j.contains("schema_version")) throw Error("schema_version: missing (is this an llmbench results file?)");
  Results r;
  r.schema_version = static_cast<int>(root.integer("schema_version"));
  if (r.schema_version != kResultsSchemaVersion)
    throw Error(cat("schema_version ", r.schema_version, " is not supported (this llmbench reads version ",
                    kResultsSchemaVersion, ")"));
  root.opt("created_at", r.created_at);
  root.opt("command", r.command);
  root.opt("interrupted", r.interrupted);
  r.env = env_from_json(root.object("env").get());
  Node points = root.array("points");
  for (std::size_t i = 0; i < points.get().size(); ++i) r.points.push_back(point_from(element_object(points, i)));
  return r;
}

Results load_results(const std::string& path) {
  json j;
  {
    // The text goes once parsed: the document (about 2.5 times the file) and the results made from it are
    // enough at once (reading a 93 MB file of 200,000 requests peaked at 320 MB instead of 389 MB).
    const std::string text = read_file(path);
    if (text.size() >= 2 && text[0] == '\x1f' && text[1] == '\x8b')
      throw Error(cat(path, ": is gzip-compressed: decompress it first (gunzip -k ", path, ")"));
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number such as 1e400
      throw Error(cat(path, ": not valid JSON: ", e.what()));
    }
  }
  try {
    return results_from_json(j);
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

void save_results(const std::string& path, const Results& results) {
  // Bytes that are not UTF-8 (from a server, a file name) become U+FFFD: the file is written whatever they are.
  write_file_atomic(path, to_json(results).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace llmbench
