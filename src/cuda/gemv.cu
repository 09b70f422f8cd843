// Decode GEMV (llmbench/cuda/gemv.h): y [B, N] = x [B, K] · (W [N, K] · scale [N])ᵀ (+ bias), B ≤ 16,
// W in the activation dtype, int8 or float8 e4m3; and the dequantize kernel of the prefill path.
#include <cuda_fp8.h>

#include <type_traits>

#include "common.cuh"
#include "llmbench/cuda/gemv.h"

namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kWarps = 8;  // warps per block
constexpr int kThreads = 32 * kWarps;

// int8 weights: 4 values per 32-bit word to float with a byte permute and one subtraction (I2F is a
// quarter-rate instruction): bias to unsigned (x ^ 0x80), place the byte under the exponent of 2^23,
// subtract 2^23 + 128.
__device__ __forceinline__ void int8x4_to_float(std::uint32_t word, float* out) {
  const std::uint32_t u = word ^ 0x80808080u;
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u | i)) - 8388736.0f;
}

template <class TW>
__device__ __forceinline__ float weight_to_float(TW v) {
  if constexpr (std::is_same_v<TW, std::int8_t>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<TW, __nv_fp8_e4m3>) {
    return static_cast<float>(v);
  } else {
    return to_f(v);
  }
}

// kE weights (one load) → float.
template <class TW, int kE>
__device__ __forceinline__ void weights_to_float(const Vec<TW, kE>& v, float* out) {
  if constexpr (std::is_same_v<TW, std::int8_t> && kE % 4 == 0) {
    const auto* words = reinterpret_cast<const std::uint32_t*>(v.v);
#pragma unroll
    for (int i = 0; i < kE / 4; ++i) int8x4_to_float(words[i], out + 4 * i);
  } else if constexpr (std::is_same_v<TW, __nv_fp8_e4m3> && kE % 2 == 0) {
    const auto* pairs = reinterpret_cast<const __nv_fp8x2_e4m3*>(v.v);
#pragma unroll
    for (int i = 0; i < kE / 2; ++i) {
      const float2 f = static_cast<float2>(pairs[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kE; ++i) out[i] = weight_to_float(v.v[i]);
  }
}

// One streaming (evict-first) load of kE weights: W is read once per step, x should stay in L1.
template <class TW, int kE>
__device__ __forceinline__ Vec<TW, kE> load_weights(const TW* p) {
  Vec<TW, kE> v;
  if constexpr (sizeof(Vec<TW, kE>) == 16) {
    const int4 raw = __ldcs(reinterpret_cast<const int4*>(p));
    *reinterpret_cast<int4*>(&v) = raw;
  } else {
    v = *reinterpret_cast<const Vec<TW, kE>*>(p);
  }
  return v;
}

// kE activations → float, in loads of at most 16 bytes.
template <class TA, int kE>
__device__ __forceinline__ void load_x(const TA* p, float* out) {
  constexpr int kX = kE * sizeof(TA) >= 16 ? 16 / static_cast<int>(sizeof(TA)) : kE;
#pragma unroll
  for (int j = 0; j < kE / kX; ++j) {
    const Vec<TA, kX> v = reinterpret_cast<const Vec<TA, kX>*>(p)[j];
#pragma unroll
    for (int i = 0; i < kX; ++i) out[j * kX + i] = to_f(v.v[i]);
  }
}

// Each warp owns kR consecutive rows of W and all kB rows of x. Lanes walk K in chunks of kE elements
// (16 bytes of W) strided by the warp; the partial sums meet in a shuffle reduction at the end.
template <class TA, class TW, int kB, int kR, int kE>
__global__ void __launch_bounds__(kThreads) gemv_kernel(GemvArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t row0 = (static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32) * kR;
  if (row0 >= a.n) return;  // the whole warp leaves together
  const TA* x = static_cast<const TA*>(a.x);
  const TW* w = static_cast<const TW*>(a.w);
  const TW* rows[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) rows[r] = w + min(row0 + r, a.n - 1) * a.k;  // past the end: recompute the last

  float acc[kR][kB];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int b = 0; b < kB; ++b) acc[r][b] = 0.0f;

  const std::int64_t k_vec = a.k / kE * kE;
#pragma unroll 2
  for (std::int64_t c = static_cast<std::int64_t>(lane) * kE; c < k_vec; c += 32 * kE) {
    Vec<TW, kE> wv[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) wv[r] = load_weights<TW, kE>(rows[r] + c);
    float wf[kR][kE];
#pragma unroll
    for (int r = 0; r < kR; ++r) weights_to_float<TW, kE>(wv[r], wf[r]);
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      if (b >= a.batch) break;
      float xf[kE];
      load_x<TA, kE>(x + b * a.x_stride + c, xf);
#pragma unroll
      for (int r = 0; r < kR; ++r)
#pragma unroll
        for (int e = 0; e < kE; ++e) acc[r][b] = fmaf(wf[r][e], xf[e], acc[r][b]);
    }
  }
  for (std::int64_t c = k_vec + lane; c < a.k; c += 32) {  // the tail when K is not a multiple of kE
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      if (b >= a.batch) break;
      const float xv = to_f(x[b * a.x_stride + c]);
#pragma unroll
      for (int r = 0; r < kR; ++r) acc[r][b] = fmaf(weight_to_float(rows[r][c]), xv, acc[r][b]);
    }
  }

  TA* y = static_cast<TA*>(a.y);
  const TA* bias = static_cast<const TA*>(a.bias);
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const std::int64_t row = row0 + r;
    const float scale = a.scale && row < a.n ? a.scale[row] : 1.0f;
    const float add = bias && row < a.n ? to_f(bias[row]) : 0.0f;
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      if (b >= a.batch) break;
      const float v = warp_sum(acc[r][b]);
      if (lane == 0 && row < a.n) y[b * a.y_stride + row] = from_f<TA>(fmaf(v, scale, add));
    }
  }
}

template <class TA, class TW, int kB, int kE>
void launch_gemv(const GemvArgs& a, Stream stream) {
  constexpr int kR = kB <= 2 ? 2 : 4;  // rows per warp: more rows reuse each x load more often
  const std::int64_t rows_per_block = static_cast<std::int64_t>(kWarps) * kR;
  const std::int64_t blocks = (a.n + rows_per_block - 1) / rows_per_block;
  gemv_kernel<TA, TW, kB, kR, kE><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  check_launch("gemv kernel");
}

template <class TA, class TW, int kB>
void launch_vec_or_scalar(const GemvArgs& a, Stream stream) {
  constexpr int kE = 16 / sizeof(TW);
  // The 16-byte path needs every W row and every x chunk it loads aligned.
  const std::size_t x_chunk = kE * sizeof(TA) >= 16 ? 16 : kE * sizeof(TA);
  const bool vec = a.k % kE == 0 && aligned16(a.w) && reinterpret_cast<std::uintptr_t>(a.x) % x_chunk == 0 &&
                   (a.x_stride * sizeof(TA)) % x_chunk == 0;
  if (vec)
    launch_gemv<TA, TW, kB, kE>(a, stream);
  else
    launch_gemv<TA, TW, kB, 1>(a, stream);
}

template <class TA, class TW>
void launch_batch(const GemvArgs& a, Stream stream) {
  if (a.batch <= 1) return launch_vec_or_scalar<TA, TW, 1>(a, stream);
  if (a.batch <= 2) return launch_vec_or_scalar<TA, TW, 2>(a, stream);
  if (a.batch <= 4) return launch_vec_or_scalar<TA, TW, 4>(a, stream);
  if (a.batch <= 8) return launch_vec_or_scalar<TA, TW, 8>(a, stream);
  launch_vec_or_scalar<TA, TW, 16>(a, stream);
}

template <class T, class TW, int kE>
__global__ void dequantize_typed(T* out, const TW* q, const float* scale, std::int64_t cols, std::int64_t total) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx * kE >= total) return;
  const std::int64_t first = idx * kE, row = first / cols;  // kE divides cols: one row per chunk
  const float s = scale[row];
  const Vec<TW, kE> v = reinterpret_cast<const Vec<TW, kE>*>(q)[idx];
  float f[kE];
  weights_to_float<TW, kE>(v, f);
#pragma unroll
  for (int i = 0; i < kE; ++i) out[first + i] = from_f<T>(f[i] * s);
}

template <class T, class TW>
void launch_dequantize(void* out, const void* q, const float* scale, std::int64_t rows, std::int64_t cols,
                       Stream stream) {
  const std::int64_t total = rows * cols;
  auto run = [&](auto e) {
    constexpr int kE = decltype(e)::value;
    const std::int64_t threads = total / kE, blocks = (threads + 255) / 256;
    dequantize_typed<T, TW, kE><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        static_cast<T*>(out), static_cast<const TW*>(q), scale, cols, total);
  };
  if (cols % 16 == 0 && aligned16(q))
    run(std::integral_constant<int, 16>{});
  else
    run(std::integral_constant<int, 1>{});
  check_launch("dequantize kernel");
}

template <class F>
void dispatch_weight(WeightType weight, F&& f) {
  switch (weight) {
    case WeightType::int8: f(Tag<std::int8_t>{}); return;
    case WeightType::fp8_e4m3: f(Tag<__nv_fp8_e4m3>{}); return;
    case WeightType::act: break;
  }
  throw Error("dequantize: weights are not quantized");
}

}  // namespace

void gemv(const GemvArgs& a, Stream stream) {
  if (a.batch < 1 || a.batch > kGemvMaxRows) throw Error(cat("gemv: batch ", a.batch, " outside [1, ", kGemvMaxRows, "]"));
  if (a.n <= 0 || a.k <= 0) return;
  if (!a.x || !a.w || !a.y) throw Error("gemv: null x, w or y");
  if (a.weight != WeightType::act && !a.scale) throw Error("gemv: quantized weights need their scales");
  dispatch(a.dtype, [&](auto tag) {
    using TA = typename decltype(tag)::type;
    switch (a.weight) {
      case WeightType::act: return launch_batch<TA, TA>(a, stream);
      case WeightType::int8: return launch_batch<TA, std::int8_t>(a, stream);
      case WeightType::fp8_e4m3: return launch_batch<TA, __nv_fp8_e4m3>(a, stream);
    }
  });
}

void dequantize(DType dtype, WeightType weight, void* out, const void* q, const float* scale, std::int64_t rows,
                std::int64_t cols, Stream stream) {
  if (rows <= 0 || cols <= 0) return;
  if (!out || !q || !scale) throw Error("dequantize: null pointer");
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_weight(weight, [&](auto wtag) {
      using TW = typename decltype(wtag)::type;
      launch_dequantize<T, TW>(out, q, scale, rows, cols, stream);
    });
  });
}

}  // namespace llmbench::cuda
