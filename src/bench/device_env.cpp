#include "llmbench/bench/device_env.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "llmbench/base/error.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <cuda_runtime.h>
#endif

namespace llmbench {
namespace {

[[maybe_unused]] std::string cuda_version_string(int v) { return cat(v / 1000, ".", (v % 1000) / 10); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times fn() `reps` times after `warmup` calls; returns the median in milliseconds.
template <class Fn>
double time_median_ms(const torch::Device& dev, int warmup, int reps, Fn fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
#ifdef LLMBENCH_WITH_CUDA
  if (dev.is_cuda()) {
    for (int i = 0; i < reps; ++i) {
      at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
      start.record();
      fn();
      stop.record();
      stop.synchronize();
      ms.push_back(start.elapsed_time(stop));
    }
    return median(ms);
  }
#endif
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return median(ms);
}

}  // namespace

std::string resolve_device(const std::string& requested) {
  if (requested == "auto") return torch::cuda::is_available() ? "cuda" : "cpu";
  if (requested == "cpu") return requested;
  const bool well_formed = requested == "cuda" || (requested.rfind("cuda:", 0) == 0 && requested.size() > 5 &&
                                                    requested.size() <= 8 &&
                                                    requested.find_first_not_of("0123456789", 5) == std::string::npos);
  if (well_formed) {  // a malformed name is named as such, before whether CUDA is there
    if (!torch::cuda::is_available()) throw UsageError(cat("device '", requested, "' requested but CUDA is not available"));
    try {
      torch::Device d(requested);
      if (d.has_index() && d.index() >= static_cast<int>(torch::cuda::device_count()))
        throw UsageError(cat("device '", requested, "': only ", torch::cuda::device_count(), " GPU(s) visible"));
    } catch (const c10::Error&) {
      throw UsageError(cat("invalid device '", requested, "' (use auto, cpu, cuda or cuda:N)"));
    }
    return requested;
  }
  throw UsageError(cat("invalid device '", requested, "' (use auto, cpu, cuda or cuda:N)"));
}

EnvInfo collect_env() {
  EnvInfo env = collect_host_env();
  env.torch_version = TORCH_VERSION;
  env.cuda_available = torch::cuda::is_available();
#ifdef LLMBENCH_WITH_CUDA
  if (env.cuda_available) {
    int v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) env.cuda_runtime = cuda_version_string(v);
    if (cudaDriverGetVersion(&v) == cudaSuccess) env.cuda_driver = cuda_version_string(v);
    for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
      const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
      GpuInfo g;
      g.index = i;
      g.name = p->name;
      g.cc_major = p->major;
      g.cc_minor = p->minor;
      g.memory_bytes = p->totalGlobalMem;
      g.sm_count = p->multiProcessorCount;
      env.gpus.push_back(g);
    }
  }
#endif
  return env;
}

Ceilings measure_ceilings(const std::string& device, int repetitions) {
  torch::NoGradGuard no_grad;
  torch::Device dev(resolve_device(device));
  Ceilings c;
  c.device = dev.str();
  c.repetitions = repetitions;
  const bool gpu = dev.is_cuda();

  const int64_t copy_bytes = gpu ? (int64_t{2} << 30) : (int64_t{256} << 20);
  auto src = torch::empty({copy_bytes}, torch::dtype(torch::kUInt8).device(dev)).fill_(1);  // [bytes] u8
  auto dst = torch::empty_like(src);                                                       // [bytes] u8
  double copy_ms = time_median_ms(dev, 3, repetitions, [&] { dst.copy_(src); });
  c.copy_gb_s = 2.0 * copy_bytes / (copy_ms * 1e-3) / 1e9;
  src = torch::Tensor();
  dst = torch::Tensor();

  const int n = gpu ? 8192 : 1024;
  auto dtype = gpu ? torch::kBFloat16 : torch::kFloat32;
  c.matmul_dtype = gpu ? "bfloat16" : "float32";
  c.matmul_size = n;
  torch::manual_seed(0);
  auto a = torch::randn({n, n}, torch::dtype(dtype).device(dev));  // [n, n]
  auto b = torch::randn({n, n}, torch::dtype(dtype).device(dev));  // [n, n]
  auto out = torch::empty({n, n}, torch::dtype(dtype).device(dev));  // [n, n]
  double mm_ms = time_median_ms(dev, 3, repetitions, [&] { torch::mm_out(out, a, b); });
  c.matmul_tflop_s = 2.0 * n * n * static_cast<double>(n) / (mm_ms * 1e-3) / 1e12;
  return c;
}

}  // namespace llmbench
