#include "llmbench/runner/duration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/memory.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/roofline.h"

namespace llmbench {
namespace {

// Runs shorter than this get no estimate on stderr.
constexpr double kLongSeconds = 60;
// A slow machine (one old core): below its estimate's minute, measuring the real ceilings is not worth it.
const Ceilings kSlowCeilings = [] {
  Ceilings c;
  c.copy_gb_s = 2;
  c.matmul_tflop_s = 0.02;
  return c;
}();

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string rate(double per_s, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (per_s >= 1000 && i < 5) per_s /= 1000, ++i;
  return fixed(per_s, per_s < 10 ? 1 : 0) + " " + prefixes[i] + unit;
}

DurationEstimate& operator+=(DurationEstimate& a, const DurationEstimate& b) {
  a.seconds += b.seconds;
  a.prefill_seconds += b.prefill_seconds;
  a.decode_seconds += b.decode_seconds;
  a.generates += b.generates;
  a.decode_steps += b.decode_steps;
  return a;
}

}  // namespace

DurationEstimate estimate_duration(const ModelShape& shape, const std::vector<PointParams>& points, int warmup,
                                   int runs, const Ceilings& ceilings) {
  DurationEstimate e;
  const long long generates = static_cast<long long>(warmup) + runs;
  for (const auto& p : points) {
    const int elem = static_cast<int>(c10::elementSize(parse_dtype(p.dtype)));
    const double step_s = decode_bytes_per_step(shape, p.batch, p.prompt_len, p.max_new_tokens, elem,
                                                matmul_elem_bytes(p.weights), kv_elem_bytes(p.kv_dtype)) /
                          (ceilings.copy_gb_s * 1e9);
    const double prefill_s = prefill_flops(shape, p.batch, p.prompt_len) / (ceilings.matmul_tflop_s * 1e12);
    const long long steps = generates * (p.max_new_tokens - 1);
    e.generates += generates;
    e.decode_steps += steps;
    e.prefill_seconds += generates * prefill_s;
    e.decode_seconds += steps * step_s;
  }
  e.seconds = e.prefill_seconds + e.decode_seconds;
  return e;
}

std::string format_duration(double seconds) {
  if (seconds < 60) return fixed(seconds, seconds < 10 ? 1 : 0) + " s";
  if (seconds < 3600) return fixed(seconds / 60, seconds < 600 ? 1 : 0) + " min";
  return fixed(seconds / 3600, 1) + " h";
}

std::optional<std::string> duration_refusal(const DurationEstimate& e, const Ceilings& c, double max_minutes) {
  if (max_minutes <= 0 || e.seconds <= max_minutes * 60) return std::nullopt;
  // A round limit that lets this run through.
  const double minutes = e.seconds / 60;
  const double step = minutes < 100 ? 10 : minutes < 1000 ? 100 : 1000;
  const long long enough = static_cast<long long>(std::ceil(minutes / step + 1e-9) * step);
  return cat("estimated at least ", format_duration(e.seconds), " (", e.generates, " generates: prefills ",
             format_duration(e.prefill_seconds), ", ", e.decode_steps, " decode steps ",
             format_duration(e.decode_seconds), "; from copy ", rate(c.copy_gb_s * 1e9, "B/s"), " and ",
             c.matmul_dtype.empty() ? "" : c.matmul_dtype + " ", "matmul ", rate(c.matmul_tflop_s * 1e12, "FLOP/s"),
             c.device.empty() ? "" : " measured on " + c.device, "), more than --max-minutes ",
             max_minutes, ": pass --max-minutes ", enough,
             " to run anyway, or reduce --runs/--warmup/--max-new-tokens/--batch/--prompt-len");
}

void check_duration(const ModelConfig& config, const std::vector<PointParams>& points, const RunOptions& options,
                    const std::optional<Ceilings>& measured, const std::string& device) {
  const ModelShape shape = shape_of(config);
  std::optional<Ceilings> ceilings = measured;
  if (!ceilings) {
    if (options.max_minutes <= 0) return;
    // Short even on a slow machine, and under the limit: nothing to say, nothing to refuse.
    if (estimate_duration(shape, points, options.warmup, options.runs, kSlowCeilings).seconds <
        std::min(kLongSeconds, options.max_minutes * 60))
      return;
    ceilings = measure_ceilings(device, 3);
  }
  const DurationEstimate e = estimate_duration(shape, points, options.warmup, options.runs, *ceilings);
  if (auto refusal = duration_refusal(e, *ceilings, options.max_minutes)) throw UsageError(*refusal);
  if (e.seconds >= kLongSeconds)
    log::info(cat("estimated duration: at least ", format_duration(e.seconds), " (", e.generates,
                  " generates, from the device ceilings)"));
}

void check_compare_duration(const std::vector<RunOptions>& models, double max_minutes) {
  if (max_minutes <= 0) return;
  DurationEstimate total, slow;
  std::vector<std::pair<ModelShape, std::vector<PointParams>>> plans;
  for (const auto& o : models) {
    const ModelShape shape = shape_of(resolve_model(o.model).config);
    plans.emplace_back(shape, expand(o));  // every point fits: check_runnable refused the plan otherwise
    slow += estimate_duration(plans.back().first, plans.back().second, o.warmup, o.runs, kSlowCeilings);
  }
  if (slow.seconds < std::min(kLongSeconds, max_minutes * 60)) return;
  std::map<std::string, Ceilings> ceilings;  // one quick measurement per device
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string device = resolve_device(models[i].device);
    if (!ceilings.count(device)) ceilings[device] = measure_ceilings(device, 3);
    total += estimate_duration(plans[i].first, plans[i].second, models[i].warmup, models[i].runs, ceilings[device]);
  }
  if (auto refusal = duration_refusal(total, ceilings.begin()->second, max_minutes)) throw UsageError(*refusal);
  if (total.seconds >= kLongSeconds)
    log::info(cat("estimated duration: at least ", format_duration(total.seconds), " for ", models.size(),
                  " models (", total.generates, " generates, from the device ceilings)"));
}

}  // namespace llmbench
