#pragma once
#include <string>
#include <vector>

// The per-kernel GPU time split of `llmbench profile`, torch-free: GPU activities (kernels, copies, sets) as
// a profiler recorded them over some steps → one row per kernel with calls and µs per step and the share of
// the step's wall time. The recording itself is llmbench/bench/kernel_profiler.h.
namespace llmbench {

// One GPU activity: a kernel, a memcpy or a memset, with its device duration.
struct KernelActivity {
  std::string name;     // as the profiler reports it (demangled C++ for kernels)
  double us = 0;        // device duration
  double start_us = -1; // start on the profiler's clock (only differences matter); < 0: unknown
};

struct KernelSplitRow {
  std::string name;           // short_kernel_name, or the full name
  double calls_per_step = 0;  // launches per step, averaged over the steps
  double us_per_step = 0;     // summed device time per step
  double share = 0;           // us_per_step / the step's wall time (0 when the wall time is unknown)
};

struct KernelSplit {
  std::string title;                 // e.g. "decode, CUDA graph replay (batch 1, 512 cached columns)"
  std::string unit = "step";         // what one "step" is: "step" or "prefill"
  int steps = 0;                     // steps the activities were recorded over
  double wall_us = 0;                // wall time of one step without the profiler
  double profiled_wall_us = 0;       // wall time of one step while recording (0: not given)
  double kernel_us = 0;              // all activities' device time per step
  double calls = 0;                  // all activities per step
  std::vector<KernelSplitRow> rows;  // by us_per_step, largest first
  std::vector<std::string> notes;    // printed under the table
};

// A readable name for a demangled kernel name: no return type, arguments or namespaces; the functor of
// torch's elementwise and reduce kernels ("vectorized_elementwise_kernel [silu_kernel]"); the first
// template argument of generic names ("Kernel2 [cutlass_80_tensorop_bf16_s16816gemm_...]"). Names that
// are not C++ signatures (cuBLAS "nvjet_…", "Memcpy DtoD (Device -> Device)") are kept whole.
std::string short_kernel_name(const std::string& name);

// The recorded work's activities out of a window that ran a lead-in first (which absorbs what a profiler
// drops at the start of a session), then paused with the GPU idle for at least `gap_us`, then the work:
// those from the first activity that starts `gap_us` or more after every earlier one has ended, in start
// order. Throws Error when an activity's start is unknown or no such pause is found (the lead-in's
// activities were all dropped, or the timestamps are not usable).
std::vector<KernelActivity> after_lead_in(std::vector<KernelActivity> activities, double gap_us);

// Groups `activities` recorded over `steps` steps by name (short_kernel_name unless `full_names`) and
// fills rows, totals and shares against `wall_us` (one step's wall time). Throws Error for steps < 1.
KernelSplit split_kernels(const std::vector<KernelActivity>& activities, int steps, double wall_us,
                          bool full_names = false);

// A fixed-width table: kernel, calls/step, µs/step, % of step; rows past `max_rows` are summed in one
// "(N more kernels)" row; then the totals, the wall times and the notes.
std::string format_kernel_split(const KernelSplit& split, int max_rows = 25);

}  // namespace llmbench
