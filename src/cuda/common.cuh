#pragma once
// Shared device helpers for src/cuda/*.cu: dtype conversions that round like torch (round to nearest
// even), 16-byte vectors, warp/block reductions, dtype dispatch and launch checks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

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

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(cat(what, ": ", cudaGetErrorString(e)));
}

}  // namespace llmbench::cuda::detail
