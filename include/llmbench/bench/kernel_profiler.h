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

// Runs `work` while the profiler records CUDA activity only (no CPU ops: little host overhead), waits for
// the device, and returns every GPU activity of that window (in no set order): kernels, memcpys and
// memsets, each with its device duration. Throws Error where kernel_profiler_available() is false.
std::vector<KernelActivity> record_gpu_activity(const std::function<void()>& work);

}  // namespace llmbench
