#pragma once
// Shared device helpers for src/cuda/*.cu: dtype conversions that round like torch (round to nearest
// even), 16-byte vectors, warp/block reductions, dtype dispatch and launch checks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "llmbench/base/error.h"
#include "llmbench/cuda/kernels.h"

namespace llmbench::cuda::detail {

template <class T>
struct Num;
template <>
struct Num<float> {
  static __device__ __forceinline__ float to(float x) { return x; }
  static __device__ __forceinline__ float from(float x) { return x; }
  static __device__ __forceinline__ float lowest() { return -FLT_MAX; }
};
template <>
struct Num<__half> {
  static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ float lowest() { return -65504.0f; }
};
template <>
struct Num<__nv_bfloat16> {
  static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
  static __device__ __forceinline__ float lowest() { return __uint_as_float(0xff7f0000u); }  // bf16 lowest
};

template <class T>
__device__ __forceinline__ float to_f(T x) { return Num<T>::to(x); }
template <class T>
__device__ __forceinline__ T from_f(float x) { return Num<T>::from(x); }
// The float value torch would see after materialising `x` as a T tensor.
template <class T>
__device__ __forceinline__ float round_f(float x) { return Num<T>::to(Num<T>::from(x)); }

// kN elements of T in one aligned load/store (16 bytes for the vector paths).
template <class T, int kN>
struct alignas(sizeof(T) * kN) Vec {
  T v[kN];
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Sum over the block, returned to every thread; every thread must call it.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < nwarps ? partial[lane] : 0.0f;
  return warp_sum(v);  // every warp reduces the same partials: no second barrier needed
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the device type of `dtype`.
template <class F>
void dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(Tag<float>{}); return;
    case DType::f16: f(Tag<__half>{}); return;
    case DType::bf16: f(Tag<__nv_bfloat16>{}); return;
  }
  throw Error("cuda kernels: unknown dtype");
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// cudaDeviceGetAttribute(kAttr) of the current device, cached per device (attributes do not change).
template <cudaDeviceAttr kAttr>
int device_attribute(const char* what) {
  constexpr int kMaxDevices = 64;
  static int cached[kMaxDevices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) throw Error(cat(what, ": no CUDA device"));
  if (dev < kMaxDevices && cached[dev] > 0) return cached[dev];
  int n = 0;
  if (cudaDeviceGetAttribute(&n, kAttr, dev) != cudaSuccess) throw Error(cat(what, ": cudaDeviceGetAttribute failed"));
  if (dev < kMaxDevices) cached[dev] = n;
  return n;
}

// Programmatic dependent launch (PDL, sm_90): a kernel started by launch_kernel() may be scheduled while the
// kernel before it in the stream is still running. Every kernel started by launch_kernel() calls pdl_wait()
// before it reads or writes anything another kernel touches (only reads of data no kernel writes — the
// weights — may come before), then pdl_launch_dependents() to let the next kernel be scheduled the same
// way. pdl_wait() returns once the previous kernel has finished and its writes are visible; since each
// kernel waits for its predecessor, the whole chain stays ordered. Without PDL both are no-ops.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
// The kernels wait at their start, then let the next one in.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}

// Cache line of p pulled into L2 (no register, no wait).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

// PDL on sm_90+ unless LLMBENCH_PDL=0 (read at every launch, so an A/B run or a test can switch it).
inline bool pdl_enabled() {
  const char* v = std::getenv("LLMBENCH_PDL");
  if (v && std::strcmp(v, "0") == 0) return false;
  return device_attribute<cudaDevAttrComputeCapabilityMajor>("pdl") >= 9;
}

// The prefill's small kernels of session 23 (softmax over the causal triangle only, RMSNorm with several
// warps per row, RoPE in 16-byte vectors) unless LLMBENCH_PREFILL_KERNELS=0 (the kernels before them: A/B).
inline bool prefill_kernels_v2() {
  const char* v = std::getenv("LLMBENCH_PREFILL_KERNELS");
  if (!v || !*v || std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  throw UsageError(cat("LLMBENCH_PREFILL_KERNELS must be 0 or 1, got '", v, "'"));
}

struct LaunchShape {
  dim3 grid, block;
  std::size_t smem = 0;
  unsigned cluster_x = 1;  // > 1: thread-block clusters of that many blocks along x (sm_90)
};

// kernel<<<shape>>>(args...) on `stream`, with PDL when enabled; throws Error(what: …) on failure.
template <class... KArgs, class... Args>
void launch_kernel(const char* what, void (*kernel)(KArgs...), const LaunchShape& shape, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (shape.cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = shape.cluster_x;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = shape.grid;
  cfg.blockDim = shape.block;
  cfg.dynamicSmemBytes = shape.smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) throw Error(cat(what, ": ", cudaGetErrorString(e)));
}

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(cat(what, ": ", cudaGetErrorString(e)));
}

}  // namespace llmbench::cuda::detail
