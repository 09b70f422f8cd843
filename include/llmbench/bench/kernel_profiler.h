#pragma once
#include <functional>
#include <string>
#include <vector>

#include "llmbench/report/kernel_split.h"

// CUDA kernel activity from libtorch's own profiler (Kineto over CUPTI): no nsys, no ncu, and the kernels
// run as they normally do (ncu replays and serialises each one).
namespace llmbench {

// True when this libtorch has the profiler API used here (libtorch >= 1.13); otherwise false and, when
// `why` is given, a one-line reason. Whether CUPTI is really there shows only once something is recorded.
bool kernel_profiler_available(std::string* why = nullptr);

// Idle pause between the lead-in and the work (after_lead_in tells them apart by it).
constexpr double kLeadInPauseMs = 20;

// Runs `work` while the profiler records CUDA activity only (no CPU ops: little host overhead), waits for
// the device, and returns every GPU activity of that window (in no set order): kernels, memcpys and
// memsets, each with its device duration and start. With `lead_in`: inside the same window it first runs
// the lead-in, waits for the device and pauses kLeadInPauseMs, then runs `work`, and returns the work's
// activities only (after_lead_in): CUPTI may drop activities at the start of a session, and the lead-in
// absorbs that. Throws Error where kernel_profiler_available() is false.
std::vector<KernelActivity> record_gpu_activity(const std::function<void()>& work,
                                                const std::function<void()>& lead_in = {});

}  // namespace llmbench
