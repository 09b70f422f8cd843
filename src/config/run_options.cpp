#include "llmbench/config/run_options.h"

#include <algorithm>
#include <cmath>

#include "llmbench/base/error.h"

namespace llmbench {
namespace {

template <class T>
void require_nonempty(const std::vector<T>& axis, const char* name) {
  if (axis.empty()) throw UsageError(cat("--", name, ": needs at least one value"));
  for (std::size_t i = 0; i < axis.size(); ++i)  // the same point twice would be measured twice
    if (std::find(axis.begin(), axis.begin() + std::ptrdiff_t(i), axis[i]) != axis.begin() + std::ptrdiff_t(i))
      throw UsageError(cat("--", name, ": ", axis[i], " is given twice"));
}

void require_at_least_one(const std::vector<int>& axis, const char* name) {
  require_nonempty(axis, name);
  for (int v : axis)
    if (v < 1) throw UsageError(cat("--", name, ": ", v, " is not allowed (must be >= 1)"));
}

}  // namespace

// Declared in src/cli/run_options_cli.h: `generate` checks its --kv-dtype with it too.
void require_one_of(const std::vector<std::string>& axis, const char* name,
                    const std::vector<std::string>& allowed) {
  require_nonempty(axis, name);
  for (const auto& v : axis) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw UsageError(cat("--", name, ": unknown value '", v, "' (expected one of: ", list, ")"));
  }
}

void validate(const RunOptions& o) {
  if (o.model.empty()) throw UsageError("--model: must not be empty");
  require_at_least_one(o.batch, "batch");
  require_at_least_one(o.prompt_len, "prompt-len");
  require_at_least_one(o.max_new_tokens, "max-new-tokens");
  require_nonempty(o.temperature, "temperature");
  for (double t : o.temperature)
    if (!(t >= 0)) throw UsageError(cat("--temperature: ", t, " is not allowed (must be >= 0)"));
  const bool device_ok = o.device == "auto" || o.device == "cpu" || o.device == "cuda" ||
                         (o.device.rfind("cuda:", 0) == 0 && o.device.size() > 5 && o.device.size() <= 8 &&
                          o.device.find_first_not_of("0123456789", 5) == std::string::npos);
  if (!device_ok) throw UsageError(cat("--device: invalid device '", o.device, "' (use auto, cpu, cuda or cuda:N)"));
  require_one_of(o.attn, "attn", {"eager", "sdpa"});
  require_one_of(o.dtype, "dtype", {"bfloat16", "float16", "float32"});
  require_one_of(o.weights, "weights", {"bf16", "int8", "fp8"});
  require_one_of(o.kv_dtype, "kv-dtype", {"bf16", "fp8"});
  if (o.fp8_gemm != "dequant" && o.fp8_gemm != "scaled-mm")
    throw UsageError(cat("--fp8-gemm: unknown value '", o.fp8_gemm, "' (expected one of: dequant, scaled-mm)"));
  if (o.fp8_gemm == "scaled-mm" && std::find(o.weights.begin(), o.weights.end(), "fp8") == o.weights.end())
    throw UsageError("--fp8-gemm scaled-mm: applies to fp8 weights only, and --weights has no fp8");
  if (o.warmup < 0) throw UsageError(cat("--warmup: ", o.warmup, " is not allowed (must be >= 0)"));
  if (o.trim < 0) throw UsageError(cat("--trim: ", o.trim, " is not allowed (must be >= 0)"));
  if (o.runs < 1) throw UsageError(cat("--runs: ", o.runs, " is not allowed (must be >= 1)"));
  if (o.runs <= 2 * o.trim)
    throw UsageError(cat("--runs ", o.runs, " with --trim ", o.trim,
                         ": trimming would drop every run (need runs > 2 * trim)"));
  if (o.top_k < 0) throw UsageError(cat("--top-k: ", o.top_k, " is not allowed (must be >= 0; 0 is off)"));
  if (!(o.top_p > 0 && o.top_p <= 1)) throw UsageError(cat("--top-p: ", o.top_p, " is outside (0, 1]"));
  if (o.prompt && o.prompt_file) throw UsageError("--prompt and --prompt-file: give only one");
  if (!o.chat_format.empty() && !o.chat) throw UsageError("--chat-format needs --chat");
  if (o.chat && !o.prompt && !o.prompt_file) throw UsageError("--chat needs a text prompt (--prompt or --prompt-file)");
  if (o.device.empty()) throw UsageError("--device: must not be empty");
  if (o.tp < 1) throw UsageError(cat("--tp: ", o.tp, " is not allowed (must be >= 1)"));
  if (!(o.dist_timeout_s > 0 && std::isfinite(o.dist_timeout_s)))
    throw UsageError(cat("--dist-timeout: ", o.dist_timeout_s, " is not allowed (must be > 0 seconds)"));
  if (!(o.max_minutes >= 0 && std::isfinite(o.max_minutes)))
    throw UsageError(cat("--max-minutes: ", o.max_minutes, " is not allowed (must be >= 0; 0 is no limit)"));
}

std::vector<PointParams> expand(const RunOptions& o) {
  std::vector<PointParams> points;
  for (const auto& dtype : o.dtype)
   for (const auto& weights : o.weights)
    for (const auto& kv_dtype : o.kv_dtype)
    for (const auto& attn : o.attn)
      for (int batch : o.batch)
        for (int prompt_len : o.prompt_len)
          for (int max_new_tokens : o.max_new_tokens)
            for (double temperature : o.temperature) {
              PointParams p;
              p.model = o.model;
              p.label = o.label.empty() ? o.model : o.label;
              p.batch = batch;
              p.prompt_len = prompt_len;
              p.max_new_tokens = max_new_tokens;
              p.temperature = temperature;
              p.attn = attn;
              p.dtype = dtype;
              p.weights = weights;
              p.kv_dtype = kv_dtype;
              p.top_k = o.top_k;
              p.top_p = o.top_p;
              p.seed = o.seed;
              p.device = o.device;
              p.cuda_graph = o.cuda_graph;
              p.fused = o.fused;
              p.gemv = o.gemv.value_or(true);
              p.fp8_gemm = o.fp8_gemm;
              p.tp = o.tp;
              points.push_back(p);
            }
  return points;
}

}  // namespace llmbench
