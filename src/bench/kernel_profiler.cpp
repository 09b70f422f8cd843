#include "llmbench/bench/kernel_profiler.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <thread>

#include "llmbench/base/error.h"

// prepareProfiler/enableProfiler/disableProfiler with a ProfilerConfig and ActivityType::CUDA: the same
// in libtorch 1.13 (Debian, CPU box) and 2.x (GPU host). KinetoEvent's duration: durationUs() (whole µs)
// up to 2.0, durationNs() from 2.1 (durationUs() was removed later).
#if TORCH_VERSION_MAJOR > 1 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR >= 13)
#define LLMBENCH_KINETO_API 1
#include <torch/csrc/autograd/profiler_kineto.h>
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define LLMBENCH_KINETO_NS 1
#endif

namespace llmbench {

namespace {

// libkineto::ActivityType values of device work (libkineto/include/ActivityType.h, stable since 2021):
// GPU_MEMCPY = 3, GPU_MEMSET = 4, CONCURRENT_KERNEL = 5. Runtime calls (7), annotations (1, 2) and CPU
// ops (0) are left out; kineto's header is not installed with libtorch, hence the numbers.
constexpr int kGpuMemcpy = 3, kGpuMemset = 4, kConcurrentKernel = 5;

#ifdef LLMBENCH_KINETO_API
double duration_us(const torch::autograd::profiler::KinetoEvent& e) {
#ifdef LLMBENCH_KINETO_NS
  return static_cast<double>(e.durationNs()) / 1e3;
#else
  return static_cast<double>(e.durationUs());  // whole µs only: short kernels read as 0 or 1
#endif
}

std::uint64_t start_ns(const torch::autograd::profiler::KinetoEvent& e) {
#ifdef LLMBENCH_KINETO_NS
  return e.startNs();
#else
  return e.startUs() * 1000;
#endif
}
#endif

}  // namespace

bool kernel_profiler_available(std::string* why) {
#ifdef LLMBENCH_KINETO_API
  (void)why;
  return true;
#else
  if (why) *why = cat("recording CUDA kernels needs libtorch >= 1.13 with its Kineto profiler (this build has libtorch ",
                      TORCH_VERSION, ")");
  return false;
#endif
}

std::vector<KernelActivity> record_gpu_activity(const std::function<void()>& work,
                                                const std::function<void()>& lead_in) {
#ifdef LLMBENCH_KINETO_API
  namespace impl = torch::profiler::impl;
  namespace prof = torch::autograd::profiler;
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  const std::set<impl::ActivityType> activities{impl::ActivityType::CUDA};
  try {
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
  } catch (const c10::Error& e) {
    throw Error(cat("the CUDA kernel profiler (Kineto) could not start: ", e.what_without_backtrace()));
  }
  try {
    if (lead_in) {
      lead_in();
      torch::cuda::synchronize();
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kLeadInPauseMs));
    }
    work();
    torch::cuda::synchronize();
  } catch (...) {
    prof::disableProfiler();
    throw;
  }
  const std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  auto device_work = [](const prof::KinetoEvent& e) {
    const int type = e.activityType();
    return type == kGpuMemcpy || type == kGpuMemset || type == kConcurrentKernel;
  };
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max();  // starts relative to the earliest
  for (const auto& e : result->events())
    if (device_work(e)) first = std::min(first, start_ns(e));
  std::vector<KernelActivity> out;
  for (const auto& e : result->events())
    if (device_work(e)) out.push_back({e.name(), duration_us(e), static_cast<double>(start_ns(e) - first) / 1e3});
  // The lead-in pause, with the GPU idle, is what separates the two; half of it is the threshold.
  // Nothing at all recorded: left to the caller to say (no Kineto/CUPTI), not a missing pause.
  return lead_in && !out.empty() ? after_lead_in(std::move(out), 0.5 * kLeadInPauseMs * 1e3) : out;
#else
  (void)work;
  (void)lead_in;
  std::string why;
  kernel_profiler_available(&why);
  throw Error(why);
#endif
}

}  // namespace llmbench
