#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "llmbench/config/run_options.h"
#include "llmbench/report/results.h"

namespace llmbench {

// Progress of a run, for the stderr progress bar: point i of n, timed run r of R (warm-ups: r < 0).
struct Progress {
  int point = 0;
  int points = 0;
  int run = 0;
  int runs = 0;
  std::string label;
};

struct RunHooks {
  std::function<void(const Progress&)> on_progress;
  // Measure copy bandwidth and matmul rate in the same process for MBU/MFU.
  bool measure_ceilings = true;
  // Ceilings this process measured before (compare: the first model's), used instead of measuring again
  // when they were taken on this run's device.
  std::optional<Ceilings> ceilings;
  // Tests only: edits the first timed run's ids [rows, cols] (row-major) before they are verified.
  std::function<void(std::int64_t* ids, std::int64_t rows, std::int64_t cols)> tamper_outputs;
};

// Runs every point of `options` (the factorial product of its axes) the way README "Metrics" defines:
// for each dtype the model is loaded once; per point the KV cache is allocated once, `warmup` untimed
// generates run, then `runs` timed ones. A point that fails (out of memory, bad size) is recorded as
// failed and the others still run. SIGINT/SIGTERM (see bench/interrupt.h) stop after the current run;
// the finished points are returned with `interrupted` set.
Results run_benchmark(const RunOptions& options, const RunHooks& hooks = {});

// The refusals run_benchmark makes before loading anything (bad options, an unknown model, a context too long,
// a dtype / attention / format the device cannot run, a --prompt without a tokenizer), without running:
// compare checks every model with it before the first one runs. Throws UsageError.
void check_runnable(const RunOptions& options);

// Appends the points of another run (compare: one model after another) to `into`.
void append_results(Results& into, Results&& more);

}  // namespace llmbench
