#include "common.cuh"
#include "llmbench/cuda/prefill_softmax.h"

namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 256;
constexpr int kMaxValues = 64;  // values per thread kept in registers between the passes

// RN(x / y) for the softmax's y = Σ exp ∈ [1, 16384] and r = RN(1 / y), one reciprocal per row: q = RN(x·r)
// is within 1.5 ulp of x / y, the remainder x − q·y is exact in one fma, and q + remainder·r rounds to the
// correctly rounded quotient (Markstein's correction, the fast path of the hardware's own div.rn.f32), as
// long as nothing underflows: dividends under 2⁻¹⁰⁰ (and 0, NaN) take the plain division. Three
// instructions where div.rn.f32 takes about ten (ncu, session 24, found the kernel at 79 % of the SMs' issue
// rate); the same bits.
__device__ __forceinline__ float div_by(float x, float y, float r) {
  if (!(x >= 0x1p-100f)) return x / y;
  const float q = x * r;
  return fmaf(fmaf(-q, y, x), r, q);
}

template <int kTpr>
__device__ __forceinline__ float row_max(float v) {
  if constexpr (kTpr == 32) {
    return warp_max(v);
  } else {
    __shared__ float partial[kThreads / 32];
    v = warp_max(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < kThreads / 32 ? partial[threadIdx.x % 32] : -INFINITY;
    v = warp_max(v);
    __syncthreads();  // partial is reused by the next reduction
    return v;
  }
}

template <int kTpr>
__device__ __forceinline__ float row_sum(float v) {
  if constexpr (kTpr == 32) {
    return warp_sum(v);
  } else {
    __shared__ float partial[kThreads / 32];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < kThreads / 32 ? partial[threadIdx.x % 32] : 0.0f;
    return warp_sum(v);
  }
}

// kTpr threads per row (32: a warp, 256: the block), kVec elements per load.
template <class T, int kVec, int kTpr>
__global__ void __launch_bounds__(kThreads) prefill_softmax_kernel(PrefillSoftmaxArgs a) {
  pdl_enter();
  using V = Vec<T, kVec>;
  constexpr int kIters = kMaxValues / kVec;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / kTpr) + threadIdx.x / kTpr;
  if (row >= a.rows) return;  // whole warps (kTpr 32) or the whole block (kTpr 256, one row) leave
  const int t = threadIdx.x % kTpr;
  T* srow = static_cast<T*>(a.scores) + row * a.row_stride;
  const std::int64_t batch = row / a.rows_per_batch, q = a.s0 + row % a.n;
  const std::uint8_t* mrow = a.allowed + batch * a.allowed_stride_b + q * a.allowed_stride_row;
  const float lowest = Num<T>::lowest();
  float v[kIters][kVec];
  float mx = -INFINITY;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const std::int64_t c0 = static_cast<std::int64_t>(t + it * kTpr) * kVec;
    if (c0 < a.cols) {
      const V e = *reinterpret_cast<const V*>(srow + c0);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const std::int64_t c = c0 + j;
        float x = round_f<T>(to_f(e.v[j]) * a.scale);                 // scores.mul_(scale)
        if (c >= a.mask_from && mrow[c] == 0) x = lowest;              // masked_fill_(blocked, lowest)
        v[it][j] = x;
        mx = fmaxf(mx, x);
      }
    }
  }
  mx = row_max<kTpr>(mx);
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const std::int64_t c0 = static_cast<std::int64_t>(t + it * kTpr) * kVec;
    if (c0 < a.cols) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        v[it][j] = expf(v[it][j] - mx);
        sum += v[it][j];
      }
    }
  }
  sum = row_sum<kTpr>(sum);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const std::int64_t c0 = static_cast<std::int64_t>(t + it * kTpr) * kVec;
    if (c0 < a.cols) {
      V o;
#pragma unroll
      for (int j = 0; j < kVec; ++j) o.v[j] = from_f<T>(v[it][j] / sum);  // softmax(float).to(dtype)
      *reinterpret_cast<V*>(srow + c0) = o;
    }
  }
}

// The passes after the max, shared by the two warp kernels below: v = exp(v − mx) and their sum over the
// warp for the vectors up to the row's `last` column, then the row written as dtype(v / Σ) there and 0 after
// it (0 / Σ). Columns after `last` were neither loaded nor kept: exp(lowest − max) = 0 adds nothing to Σ.
template <class T, int kVec, int kIters>
__device__ __forceinline__ void normalise_row(float (&v)[kIters][kVec], float mx, T* srow, int cols, int last) {
  using V = Vec<T, kVec>;
  const int lane = threadIdx.x % 32;
  mx = warp_max(mx);
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c0 = (lane + it * 32) * kVec;
    if (c0 < cols && c0 <= last) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        v[it][j] = expf(v[it][j] - mx);
        sum += v[it][j];
      }
    }
  }
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c0 = (lane + it * 32) * kVec;
    if (c0 < cols) {
      V o;
#pragma unroll
      for (int j = 0; j < kVec; ++j) o.v[j] = from_f<T>(c0 <= last ? div_by(v[it][j], sum, inv) : 0.0f);
      *reinterpret_cast<V*>(srow + c0) = o;
    }
  }
}

// One warp per row with kIters · kVec values per lane (session 23), for a mask read from memory: registers
// sized to the row, the mask read kVec bytes at a time. The same operations in the same order as the kernel
// above on every column.
template <class T, int kVec, int kIters>
__global__ void __launch_bounds__(kThreads) prefill_softmax_warp_kernel(PrefillSoftmaxArgs a, bool mask_vec) {
  pdl_enter();
  using V = Vec<T, kVec>;
  using M = Vec<std::uint8_t, kVec>;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (row >= a.rows) return;  // whole warps leave
  const int lane = threadIdx.x % 32;
  T* srow = static_cast<T*>(a.scores) + row * a.row_stride;
  const std::int64_t batch = row / a.rows_per_batch, q = a.s0 + row % a.n;
  const std::uint8_t* mrow = a.allowed + batch * a.allowed_stride_b + q * a.allowed_stride_row;
  // Column indices in int (at most kPrefillSoftmaxMaxCols).
  const int cols = static_cast<int>(a.cols);
  const int mask_from = static_cast<int>(a.mask_from < a.cols ? a.mask_from : a.cols);
  const float lowest = Num<T>::lowest();
  float v[kIters][kVec];
  float mx = -INFINITY;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c0 = (lane + it * 32) * kVec;
    if (c0 < cols) {
      const V e = *reinterpret_cast<const V*>(srow + c0);
      M m{};
      if (c0 + kVec > mask_from) {
        if (mask_vec) {
          m = *reinterpret_cast<const M*>(mrow + c0);
        } else {
#pragma unroll
          for (int j = 0; j < kVec; ++j) m.v[j] = c0 + j < cols ? mrow[c0 + j] : 0;
        }
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        float x = round_f<T>(to_f(e.v[j]) * a.scale);        // scores.mul_(scale)
        if (c0 + j >= mask_from && m.v[j] == 0) x = lowest;  // masked_fill_
        v[it][j] = x;
        mx = fmaxf(mx, x);
      }
    }
  }
  normalise_row<T, kVec, kIters>(v, mx, srow, cols, cols - 1);
}

// The unpadded causal triangle (a.causal): row q = s0 + r % n sees exactly columns [0, q]. No mask read, no
// load, exp or sum for the vectors after column q (their probabilities are 0, as the masked formula gives
// them), the per-column test only in the vector that holds the diagonal, and the division through div_by:
// the same operations in the same order on every value it keeps, so the same bits. Session 24: ncu put the
// one warp kernel for both at 79 % of the SMs' issue rate and 21 % of DRAM on Qwen2.5-7B's 512-token
// batch-4 prefill (about 700 instructions per 512-column row).
template <class T, int kVec, int kIters>
__global__ void __launch_bounds__(kThreads) prefill_softmax_causal_kernel(PrefillSoftmaxArgs a) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (row >= a.rows) return;  // whole warps leave
  const int lane = threadIdx.x % 32;
  T* srow = static_cast<T*>(a.scores) + row * a.row_stride;
  const int cols = static_cast<int>(a.cols);
  const int last = static_cast<int>(a.s0 + row % a.n);  // below cols: the row index of a causal tile
  const float lowest = Num<T>::lowest();
  float v[kIters][kVec];
  float mx = -INFINITY;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c0 = (lane + it * 32) * kVec;
    if (c0 < cols && c0 <= last) {
      const V e = *reinterpret_cast<const V*>(srow + c0);
      const bool whole = c0 + kVec - 1 <= last;  // no column of the vector is masked
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        v[it][j] = !whole && c0 + j > last ? lowest : round_f<T>(to_f(e.v[j]) * a.scale);  // mul_, masked_fill_
        mx = fmaxf(mx, v[it][j]);
      }
    }
  }
  normalise_row<T, kVec, kIters>(v, mx, srow, cols, last);
}

template <class T, int kVec, int kIters>
void launch_warp(const PrefillSoftmaxArgs& a, Stream stream) {
  const bool mask_vec = kVec > 1 && reinterpret_cast<std::uintptr_t>(a.allowed) % kVec == 0 &&
                        a.allowed_stride_b % kVec == 0 && a.allowed_stride_row % kVec == 0 && a.cols % kVec == 0;
  const auto blocks = static_cast<unsigned>((a.rows + kThreads / 32 - 1) / (kThreads / 32));
  if (a.causal)
    launch_kernel("prefill_softmax kernel", prefill_softmax_causal_kernel<T, kVec, kIters>,
                  {dim3(blocks), dim3(kThreads)}, stream, a);
  else
    launch_kernel("prefill_softmax kernel", prefill_softmax_warp_kernel<T, kVec, kIters>,
                  {dim3(blocks), dim3(kThreads)}, stream, a, mask_vec);
}

template <class T, int kVec>
void launch(const PrefillSoftmaxArgs& a, Stream stream) {
  if (prefill_kernels_v2()) {
    constexpr std::int64_t kWarpCols = 32 * kVec;  // columns of one 16-byte load per lane (8 · 32 for bf16)
    if (a.cols <= kWarpCols) return launch_warp<T, kVec, 1>(a, stream);
    if (a.cols <= 2 * kWarpCols) return launch_warp<T, kVec, 2>(a, stream);
    if (a.cols <= 4 * kWarpCols) return launch_warp<T, kVec, 4>(a, stream);
    if (a.cols <= static_cast<std::int64_t>(32) * kMaxValues) return launch_warp<T, kVec, kMaxValues / kVec>(a, stream);
  }
  if (a.cols <= static_cast<std::int64_t>(32) * kMaxValues) {
    const auto blocks = static_cast<unsigned>((a.rows + kThreads / 32 - 1) / (kThreads / 32));
    launch_kernel("prefill_softmax kernel", prefill_softmax_kernel<T, kVec, 32>, {dim3(blocks), dim3(kThreads)}, stream, a);
  } else {
    launch_kernel("prefill_softmax kernel", prefill_softmax_kernel<T, kVec, kThreads>,
                  {dim3(static_cast<unsigned>(a.rows)), dim3(kThreads)}, stream, a);
  }
}

}  // namespace

void prefill_softmax(const PrefillSoftmaxArgs& a, Stream stream) {
  if (a.rows <= 0) return;
  if (a.cols <= 0 || a.cols > kPrefillSoftmaxMaxCols)
    throw Error(cat("prefill_softmax kernel: ", a.cols, " columns (1 to ", kPrefillSoftmaxMaxCols, " supported)"));
  if (!a.scores || !a.allowed || a.n <= 0 || a.rows_per_batch <= 0 || a.row_stride < a.cols)
    throw Error("prefill_softmax kernel: bad arguments");
  if (a.rows > 0x7fffffffLL) throw Error(cat("prefill_softmax kernel: ", a.rows, " rows exceed the grid"));
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    if (a.cols % kVec == 0 && a.row_stride % kVec == 0 && aligned16(a.scores))
      launch<T, kVec>(a, stream);
    else
      launch<T, 1>(a, stream);
  });
}

}  // namespace llmbench::cuda
