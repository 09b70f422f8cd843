#include "common.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kMaxIters = 8;     // vectors per thread kept in registers between the two passes
constexpr int kMaxThreads = 512;  // 1024 threads × (8 × 8 floats kept) exceed the registers of one SM (hidden 8192)

// Where the block-per-row kernel reads x: rows of T, or (Partials) the float sum of a split-K GEMM's partial
// products, summed in split order and rounded to T once, as a split-K GEMM's float reduction rounds its output.
template <class T, int kVec>
struct Rows {
  const T* x;
  __device__ __forceinline__ Vec<T, kVec> load(std::int64_t row, std::int64_t hidden, int i) const {
    return reinterpret_cast<const Vec<T, kVec>*>(x + row * hidden)[i];
  }
};
template <class T, int kVec>
struct Partials {
  const float* p;       // [splits, rows, hidden] float32
  int splits;
  std::int64_t plane;   // rows × hidden
  __device__ __forceinline__ Vec<T, kVec> load(std::int64_t row, std::int64_t hidden, int i) const {
    static_assert(kVec % 4 == 0, "float4 loads");
    const float4* at = reinterpret_cast<const float4*>(p + row * hidden + static_cast<std::int64_t>(i) * kVec);
    float acc[kVec];
#pragma unroll
    for (int j = 0; j < kVec / 4; ++j) {
      const float4 f = at[j];
      acc[4 * j] = f.x, acc[4 * j + 1] = f.y, acc[4 * j + 2] = f.z, acc[4 * j + 3] = f.w;
    }
    for (int s = 1; s < splits; ++s) {
      at += plane / 4;
#pragma unroll
      for (int j = 0; j < kVec / 4; ++j) {
        const float4 f = at[j];
        acc[4 * j] += f.x, acc[4 * j + 1] += f.y, acc[4 * j + 2] += f.z, acc[4 * j + 3] += f.w;
      }
    }
    Vec<T, kVec> v;
#pragma unroll
    for (int j = 0; j < kVec; ++j) v.v[j] = from_f<T>(acc[j]);
    return v;
  }
};

// One block per row. Pass 1: (residual += x), sum of squares in float; pass 2: scale and write.
template <class T, int kVec, class Src>
__global__ void __launch_bounds__(kMaxThreads) rms_norm_kernel(T* out, T* residual, Src x, const T* weight, std::int64_t hidden, float eps) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t row = blockIdx.x;
  const int nvec = static_cast<int>(hidden / kVec);
  V* rr = residual ? reinterpret_cast<V*>(residual + row * hidden) : nullptr;
  float vals[kMaxIters][kVec];
  float ss = 0.0f;
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    const int i = threadIdx.x + it * blockDim.x;
    if (i < nvec) {
      V a = x.load(row, hidden, i);
      if (rr) {
        const V r = rr[i];
#pragma unroll
        for (int j = 0; j < kVec; ++j) a.v[j] = from_f<T>(to_f(r.v[j]) + to_f(a.v[j]));  // bf16 add, as torch
        rr[i] = a;
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        vals[it][j] = to_f(a.v[j]);
        ss += vals[it][j] * vals[it][j];
      }
    }
  }
  ss = block_sum(ss);
  const float inv = rsqrtf(ss * (1.0f / static_cast<float>(hidden)) + eps);  // torch: mean = sum · (1/H)
  const V* wr = reinterpret_cast<const V*>(weight);
  V* outr = reinterpret_cast<V*>(out + row * hidden);
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    const int i = threadIdx.x + it * blockDim.x;
    if (i < nvec) {
      const V w = wr[i];
      V o;
#pragma unroll
      for (int j = 0; j < kVec; ++j) o.v[j] = from_f<T>(to_f(w.v[j]) * round_f<T>(vals[it][j] * inv));
      outr[i] = o;
    }
  }
}

// Many rows (a prefill): one warp per row, 8 rows per block, no block barrier. Pass 1 as above with the
// sum reduced by the warp; pass 2 re-reads the row (x, or the residual this thread just wrote: L1/L2),
// so nothing is held in registers between the passes. The block-per-row kernel keeps a few hundred
// threads of one row waiting at two barriers, which measured ≈ 0.8 TB/s on 32,768 rows (H200).
constexpr int kRowsPerBlock = 8;
constexpr std::int64_t kMinRowsForWarps = 256;

// kW warps per row (1, 2, 4 or 8; session 23): 8 / kW rows per block, the sum of squares reduced by each
// warp and then across the row's warps through shared memory. One warp per row left a 512-token prefill
// 512 warps for 132 SMs (Qwen2.5-7B: 14.8 µs per call against ≈ 4.4 µs of traffic, H200). kW = 1 is the
// kernel described above. The float sum is taken in another order for kW > 1 (the last bit of the
// scale may differ, as between any two reductions; torch's own differs from both).
template <class T, int kVec, int kW>
__global__ void __launch_bounds__(kRowsPerBlock * 32) rms_norm_rows_kernel(T* out, T* residual, const T* x,
                                                                            const T* weight, std::int64_t rows,
                                                                            std::int64_t hidden, float eps) {
  pdl_enter();
  using V = Vec<T, kVec>;
  constexpr int kRowThreads = kW * 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kRowsPerBlock / kW) + warp / kW;
  const bool live = row < rows;
  if (kW == 1 && !live) return;  // whole warps leave: no barrier below
  const int t = (warp % kW) * 32 + lane, nvec = static_cast<int>(hidden / kVec);
  const V* xr = reinterpret_cast<const V*>(x + row * hidden);
  V* rr = residual ? reinterpret_cast<V*>(residual + row * hidden) : nullptr;
  float ss = 0.0f;
  if (live) {
    for (int i = t; i < nvec; i += kRowThreads) {
      V a = xr[i];
      if (rr) {
        const V r = rr[i];
#pragma unroll
        for (int j = 0; j < kVec; ++j) a.v[j] = from_f<T>(to_f(r.v[j]) + to_f(a.v[j]));  // bf16 add, as torch
        rr[i] = a;
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) ss += to_f(a.v[j]) * to_f(a.v[j]);
    }
  }
  ss = warp_sum(ss);
  if constexpr (kW > 1) {
    __shared__ float partial[kRowsPerBlock];
    if (lane == 0) partial[warp] = ss;
    __syncthreads();  // every warp of the block reaches it (dead rows too)
    ss = 0.0f;
#pragma unroll
    for (int w = 0; w < kW; ++w) ss += partial[warp / kW * kW + w];
    if (!live) return;
  }
  const float inv = rsqrtf(ss * (1.0f / static_cast<float>(hidden)) + eps);  // torch: mean = sum · (1/H)
  const V* wr = reinterpret_cast<const V*>(weight);
  const V* src = rr ? rr : xr;  // this thread's own writes of pass 1, or x (read before out overwrites it)
  V* outr = reinterpret_cast<V*>(out + row * hidden);
  for (int i = t; i < nvec; i += kRowThreads) {
    const V a = src[i], w = wr[i];
    V o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) o.v[j] = from_f<T>(to_f(w.v[j]) * round_f<T>(to_f(a.v[j]) * inv));
    outr[i] = o;
  }
}

// Warps per row: enough warps for one full wave (≈ 8,192: 62 per SM of an H200, which holds 64) for a row
// count, 1 from 8,192 rows. Session 23 aimed at 4,096; ncu (session 24) found that half a wave on Qwen2.5-7B's
// 2,048-row prefill: 46 % achieved occupancy, 1.8 TB/s, the warps waiting on their loads.
int rows_kernel_warps(std::int64_t rows) {
  if (!prefill_kernels_v2()) return 1;
  for (int w = 1; w < kRowsPerBlock; w *= 2)
    if (rows * w >= 8192) return w;
  return kRowsPerBlock;
}

int block_threads(std::int64_t nvec);

template <class T, int kVec>
void launch(void* out, void* residual, const void* x, const void* weight, std::int64_t rows, std::int64_t hidden,
            float eps, Stream stream) {
  const std::int64_t nvec = hidden / kVec;
  if (rows >= kMinRowsForWarps) {
    auto go = [&](auto kernel, int w) {
      const std::int64_t per_block = kRowsPerBlock / w;
      const auto blocks = static_cast<unsigned>((rows + per_block - 1) / per_block);
      launch_kernel("rms_norm kernel", kernel, {dim3(blocks), dim3(kRowsPerBlock * 32)}, stream, static_cast<T*>(out),
                    static_cast<T*>(residual), static_cast<const T*>(x), static_cast<const T*>(weight), rows, hidden,
                    eps);
    };
    switch (rows_kernel_warps(rows)) {
      case 1: go(rms_norm_rows_kernel<T, kVec, 1>, 1); return;
      case 2: go(rms_norm_rows_kernel<T, kVec, 2>, 2); return;
      case 4: go(rms_norm_rows_kernel<T, kVec, 4>, 4); return;
      default: go(rms_norm_rows_kernel<T, kVec, 8>, 8); return;
    }
  }
  const int threads = block_threads(nvec);
  launch_kernel("rms_norm kernel", rms_norm_kernel<T, kVec, Rows<T, kVec>>, {dim3(static_cast<unsigned>(rows)), dim3(threads)},
                stream, static_cast<T*>(out), static_cast<T*>(residual), Rows<T, kVec>{static_cast<const T*>(x)},
                static_cast<const T*>(weight), hidden, eps);
}

int block_threads(std::int64_t nvec) {
  const int threads = static_cast<int>(std::min<std::int64_t>(kMaxThreads, std::max<std::int64_t>(32, (nvec + 31) / 32 * 32)));
  if (nvec > static_cast<std::int64_t>(threads) * kMaxIters)
    throw Error(cat("rms_norm kernel: hidden size ", nvec, " vectors is too large"));
  return threads;
}

void run(DType dtype, void* out, void* residual, const void* x, const void* weight, std::int64_t rows,
         std::int64_t hidden, float eps, Stream stream) {
  if (rows <= 0) return;
  if (hidden <= 0) throw Error(cat("rms_norm kernel: bad hidden size ", hidden));
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    const bool vec = hidden % kVec == 0 && aligned16(out) && aligned16(x) && aligned16(weight) &&
                     (!residual || aligned16(residual));
    if (vec)
      launch<T, kVec>(out, residual, x, weight, rows, hidden, eps, stream);
    else
      launch<T, 1>(out, residual, x, weight, rows, hidden, eps, stream);
  });
}

}  // namespace

void rms_norm(DType dtype, void* out, const void* x, const void* weight, std::int64_t rows, std::int64_t hidden,
              float eps, Stream stream) {
  run(dtype, out, nullptr, x, weight, rows, hidden, eps, stream);
}

void add_rms_norm(DType dtype, void* out, void* residual, const void* x, const void* weight, std::int64_t rows,
                  std::int64_t hidden, float eps, Stream stream) {
  if (!residual) throw Error("add_rms_norm kernel: residual is null");
  run(dtype, out, residual, x, weight, rows, hidden, eps, stream);
}

void add_rms_norm_partials(DType dtype, void* out, void* residual, const float* partials, int splits,
                           const void* weight, std::int64_t rows, std::int64_t hidden, float eps, Stream stream) {
  if (rows <= 0) return;
  if (!residual || !partials || !out || !weight) throw Error("add_rms_norm_partials kernel: null pointer");
  if (splits < 1) throw Error(cat("add_rms_norm_partials kernel: bad split count ", splits));
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    if (hidden <= 0 || hidden % kVec != 0 || !aligned16(out) || !aligned16(residual) || !aligned16(weight) ||
        !aligned16(partials))
      throw Error(cat("add_rms_norm_partials kernel: hidden size ", hidden,
                      " not a multiple of ", kVec, " or a pointer not 16-byte aligned"));
    const int threads = block_threads(hidden / kVec);
    launch_kernel("add_rms_norm_partials kernel", rms_norm_kernel<T, kVec, Partials<T, kVec>>,
                  {dim3(static_cast<unsigned>(rows)), dim3(threads)}, stream, static_cast<T*>(out),
                  static_cast<T*>(residual), Partials<T, kVec>{partials, splits, rows * hidden},
                  static_cast<const T*>(weight), hidden, eps);
  });
}

}  // namespace llmbench::cuda
