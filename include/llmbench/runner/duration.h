#pragma once
#include <optional>
#include <string>
#include <vector>

#include "llmbench/base/env.h"
#include "llmbench/config/run_options.h"
#include "llmbench/model/model_config.h"

// How long a run will take at least, from the measured ceilings, before anything is loaded: a 7B model
// on a CPU takes hours, and the user should hear so before the first hour.
namespace llmbench {

struct ModelShape;  // llmbench/bench/memory.h (torch): kept out of this header for the CLI's sake

// Per point, (warm-ups + runs) generates, each one prefill (prefill_flops / matmul rate) and N − 1 decode
// steps (decode_bytes_per_step / copy bandwidth, as MBU counts them). The device cannot beat its
// ceilings, so this is a lower bound: real runs take longer (MBU and MFU below 1, the CPU's bf16 matmul
// slower than the float32 rate measured there).
struct DurationEstimate {
  double seconds = 0;
  double prefill_seconds = 0;     // all prefills
  double decode_seconds = 0;      // all decode steps
  long long generates = 0;        // warm-ups + timed runs over all points
  long long decode_steps = 0;
};

DurationEstimate estimate_duration(const ModelShape& shape, const std::vector<PointParams>& points, int warmup,
                                   int runs, const Ceilings& ceilings);

// "45 s", "12.5 min", "3.2 h".
std::string format_duration(double seconds);

// The refusal, or nothing: an estimate above `max_minutes` (> 0; 0 is no limit) is a UsageError with the
// estimate, its parts and the way out (a --max-minutes that would pass, or fewer runs/tokens).
std::optional<std::string> duration_refusal(const DurationEstimate& e, const Ceilings& ceilings, double max_minutes);

// `run`'s check before the model is loaded, over the points the memory estimate lets run (the others fail
// at once): estimates with the `measured` ceilings, else with quick ones
// measured on `device` (not even that when a slow machine would finish within a minute); logs the
// estimate of a run longer than a minute; throws the refusal as a UsageError.
void check_duration(const ModelConfig& config, const std::vector<PointParams>& points, const RunOptions& options,
                    const std::optional<Ceilings>& measured, const std::string& device);

// `compare`'s check of the whole plan (every model's estimate summed) before the first model loads.
void check_compare_duration(const std::vector<RunOptions>& models, double max_minutes);

}  // namespace llmbench
