// Decode GEMV (llmbench/cuda/gemv.h): y [B, N] = x [B, K] · (W [N, K] · scale [N])ᵀ (+ bias), B ≤ 16,
// W in the activation dtype, int8 or float8 e4m3, on CUDA cores (simt) or tensor cores (mma); and the
// dequantize kernel of the prefill path.
#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "llmbench/cuda/gemv.h"
#include "mma.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;
namespace cg = cooperative_groups;

constexpr int kWarps = 8;  // warps per block
constexpr int kThreads = 32 * kWarps;

// Bytes of W the resident blocks of one launch pull into L2 before the previous kernel has finished
// (PDL: the blocks are scheduled while it runs; W does not depend on it). A small matrix (o, qkv) is
// then read from L2 instead of HBM; a large one gets its first bytes of every resident block's rows.
constexpr std::int64_t kPrefetchBytes = std::int64_t{32} << 20;

// Before pdl_wait(): lines of rows [0, rows) of a block's range (`bytes` per row from `first`, rows
// `stride` bytes apart), at most kPrefetchBytes / gridDim.x for the block, spread over its threads.
__device__ __forceinline__ void prefetch_block_l2(const void* first, std::int64_t stride, int rows, std::int64_t bytes) {
  const std::int64_t budget = kPrefetchBytes / gridDim.x / rows;
  const std::int64_t lines = (min(bytes, budget) + 127) / 128;
  for (std::int64_t i = threadIdx.x; i < lines * rows; i += blockDim.x)
    prefetch_l2(static_cast<const char*>(first) + (i / lines) * stride + (i % lines) * 128);
}

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

// Each group of kS warps owns kR consecutive rows of W and all kB rows of x; a block holds kWarps / kS
// groups. The group's lanes walk K in chunks of kE elements (16 bytes of W) strided by the group, so a
// tall-K matrix (down) is spread over more warps and blocks; the partial sums meet in a shuffle reduction,
// then (kS > 1) in shared memory.
template <class TA, class TW, int kB, int kR, int kE, int kS>
__global__ void __launch_bounds__(kThreads) simt_kernel(GemvArgs a) {
  constexpr int kGroups = kWarps / kS;
  const std::int64_t block_row0 = static_cast<std::int64_t>(blockIdx.x) * kGroups * kR;
  prefetch_block_l2(static_cast<const TW*>(a.w) + block_row0 * a.k, a.k * static_cast<std::int64_t>(sizeof(TW)),
                    static_cast<int>(min(static_cast<std::int64_t>(kGroups * kR), a.n - block_row0)),
                    a.k * static_cast<std::int64_t>(sizeof(TW)));
  pdl_enter();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, part = warp % kS;
  const std::int64_t row0 = block_row0 + static_cast<std::int64_t>(warp / kS) * kR;
  if (kS == 1 && row0 >= a.n) return;  // the whole warp leaves together (kS > 1: every warp reaches the barrier)
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
  for (std::int64_t c = static_cast<std::int64_t>(part * 32 + lane) * kE; c < k_vec; c += 32 * kS * kE) {
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
  for (std::int64_t c = k_vec + part * 32 + lane; c < a.k; c += 32 * kS) {  // the tail when K is not a multiple of kE
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      if (b >= a.batch) break;
      const float xv = to_f(x[b * a.x_stride + c]);
#pragma unroll
      for (int r = 0; r < kR; ++r) acc[r][b] = fmaf(weight_to_float(rows[r][c]), xv, acc[r][b]);
    }
  }

#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int b = 0; b < kB; ++b) acc[r][b] = warp_sum(acc[r][b]);
  if constexpr (kS > 1) {
    // The group's other warps hand their sums to its first warp.
    __shared__ float partial[kWarps][kR][kB];
    if (lane == 0 && part > 0)
#pragma unroll
      for (int r = 0; r < kR; ++r)
#pragma unroll
        for (int b = 0; b < kB; ++b) partial[warp][r][b] = acc[r][b];
    __syncthreads();
    if (part > 0 || row0 >= a.n) return;
#pragma unroll
    for (int p = 1; p < kS; ++p)
#pragma unroll
      for (int r = 0; r < kR; ++r)
#pragma unroll
        for (int b = 0; b < kB; ++b) acc[r][b] += partial[warp + p][r][b];
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
      if (lane == 0 && row < a.n) y[b * a.y_stride + row] = from_f<TA>(fmaf(acc[r][b], scale, add));
    }
  }
}

// Warps per row group of the simt kernel: `a.splits` when set, else chosen by size (H200, bench_gemv
// qwen2.5-7b, batch 1, µs at 1 warp → the chosen split: int8 qkv 8.5 → 7.9, o 7.4 → 6.2, down 29.6 →
// 23.0; bf16 qkv 13.6 → 10.5, o 12.0 → 8.7, down 48.2 → 34.2; gate_up and lm_head stay at 1, where
// splits measured slower). At one or two rows: one warp per row group when the rows alone give
// kSimtFullGridWarps pairs of rows (gate_up, lm_head), else as many (up to 8) as leave each warp at
// least 1.75 passes of 32 16-byte chunks per row. Larger batches (compute-bound; the simt kernel is not
// the automatic choice there): at least 8 passes per warp.
constexpr std::int64_t kSimtFullGridWarps = 8192;  // about the H200's 132 SMs × 64 resident warps

template <int kE>
int simt_splits(const GemvArgs& a) {
  if (a.splits > 0) return a.splits;
  const std::int64_t chunks = a.k / kE;  // 16-byte chunks per row
  int s = 1;
  if (a.batch <= 2) {
    if ((a.n + 1) / 2 >= kSimtFullGridWarps) return 1;
    while (s < kWarps && chunks * 4 >= 2 * s * 32 * 7) s *= 2;  // 2s warps: chunks / (32 · 2s) ≥ 7 / 4
  } else {
    while (s < kWarps && chunks >= 2 * s * 32 * 8) s *= 2;
  }
  return s;
}

template <class TA, class TW, int kB, int kR, int kE>
void launch_gemv_rows(const GemvArgs& a, Stream stream) {
  auto run = [&](auto split) {
    constexpr int kS = decltype(split)::value;
    const std::int64_t rows_per_block = static_cast<std::int64_t>(kWarps / kS) * kR;
    const std::int64_t blocks = (a.n + rows_per_block - 1) / rows_per_block;
    launch_kernel("gemv simt kernel", simt_kernel<TA, TW, kB, kR, kE, kS>,
                  {dim3(static_cast<unsigned>(blocks)), dim3(kThreads)}, stream, a);
  };
  if constexpr (kE == 1) {  // the unaligned fallback: one warp per row group
    if (a.splits > 1) throw Error("gemv: the simt kernel splits K only for 16-byte aligned rows");
    run(std::integral_constant<int, 1>{});
  } else {
    switch (simt_splits<kE>(a)) {
      case 1: return run(std::integral_constant<int, 1>{});
      case 2: return run(std::integral_constant<int, 2>{});
      case 4: return run(std::integral_constant<int, 4>{});
      case 8: return run(std::integral_constant<int, 8>{});
      default: throw Error(cat("gemv: the simt kernel splits K over 1, 2, 4 or 8 warps, not ", a.splits));
    }
  }
}

// Rows of W per warp (a.rows, else chosen): 4 above two rows of x (more rows reuse each x load more
// often); at one or two rows 4 for int8 W and 2 for the others. H200, bench_gemv qwen2.5-7b at batch 1, µs
// with 2 → 4 rows per warp: int8 gate_up 38.9 → 34.8, lm_head 138.4 → 125.4, qkv 7.9 → 7.5, o 6.2 → 6.5,
// down 22.8 → 22.6 (each warp streams twice the bytes between its fixed costs); bf16 gate_up 62.8 → 60.3
// but down 33.4 → 34.9 and lm_head 232.4 → 235.8, and `llmbench run` bf16 unchanged, so bf16 keeps 2.
template <class TA, class TW, int kB, int kE>
void launch_gemv(const GemvArgs& a, Stream stream) {
  if (a.rows != 0 && a.rows != 2 && a.rows != 4) throw Error(cat("gemv: rows per warp must be 2 or 4, not ", a.rows));
  if constexpr (kB <= 2 && kE > 1) {
    const int rows = a.rows != 0 ? a.rows : std::is_same_v<TW, std::int8_t> ? 4 : 2;
    if (rows == 4) return launch_gemv_rows<TA, TW, kB, 4, kE>(a, stream);
  }
  launch_gemv_rows<TA, TW, kB, (kB <= 2 ? 2 : 4), kE>(a, stream);
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

// ---- Tensor-core kernel ----
// Block = 16 rows of W (row0 …) × its split's range of K (all of K without splits); its kMmaWarps warps
// take the range's steps s = first + warp, first + warp + 8, …
// A step is 4 kE columns: lane = 4 g + t loads 16 bytes (kE elements) of rows row0 + g and row0 + 8 + g
// at column 4 kE s + kE t, and kE elements of x for batch rows g (and g + 8) at the same columns. Read as
// packed pairs of TA, those are the A (W) and B (xᵀ) fragments of kE / 4 m16n8k16 MMAs whose k index runs
// over the step's columns in a permuted order — the same for A and B, so each MMA is still a dot product
// over 16 distinct columns. The accumulators (rows g, g + 8 × batch 2t, 2t + 1) of the 8 warps are summed
// in shared memory. int8 and e4m3 convert exactly to bf16/fp16, so the products are exact and the sums
// are float, as in the simt kernel (a different summation order).
constexpr int kMmaWarps = 8;
constexpr int kMmaThreads = 32 * kMmaWarps;
constexpr int kMmaUnroll = 4;  // steps a warp has in flight

template <class TW>
constexpr int kMmaE = 16 / static_cast<int>(sizeof(TW));  // W elements per 16-byte load

// 16 bytes of W (kMmaE<TW> elements) as kMmaE / 2 packed pairs of TA (element 2p in the low half of p).
template <class TA, class TW>
__device__ __forceinline__ void to_pairs(const int4& raw, uint32_t (&out)[kMmaE<TW> / 2]) {
  const uint32_t words[4] = {static_cast<uint32_t>(raw.x), static_cast<uint32_t>(raw.y), static_cast<uint32_t>(raw.z),
                             static_cast<uint32_t>(raw.w)};
  if constexpr (std::is_same_v<TW, std::int8_t>) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float f[4];
      int8x4_to_float(words[i], f);
      out[2 * i] = pack2<TA>(f[0], f[1]);
      out[2 * i + 1] = pack2<TA>(f[2], f[3]);
    }
  } else if constexpr (std::is_same_v<TW, __nv_fp8_e4m3>) {
    const auto* pairs = reinterpret_cast<const __nv_fp8x2_e4m3*>(words);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float2 f = static_cast<float2>(pairs[i]);
      out[i] = pack2<TA>(f.x, f.y);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = words[i];
  }
}

// cp.async (sm_80+): 16 bytes of global memory into shared memory without passing through registers or
// L1, evict-first in L2 (W is read once per step), completed in commit groups.
__device__ __forceinline__ std::uint64_t evict_first_policy() {
  std::uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, std::uint64_t policy) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Shared memory of the mma kernel's ring: kRing slots × kMmaWarps warps × (row g, row g + 8) × 32 lanes
// of 16 bytes (a lane's two loads of one step, 32 lanes apart: conflict-free).
constexpr std::size_t mma_ring_bytes(int ring) { return static_cast<std::size_t>(ring) * kMmaWarps * 2 * 32 * 16; }

// kNT n-tiles of 8 batch rows: 1 for B ≤ 8, 2 for B ≤ 16. Grid: splits × (N / 16) blocks; the `splits`
// blocks of one row tile (a cluster along x, sm_90) each take a contiguous range of the K steps, and the
// cluster's first block adds the others' sums through distributed shared memory.
// kGuarded: the warp's last steps (fewer than kMmaUnroll) run as one more unrolled round whose missing
// steps load and multiply nothing, so their loads are in flight together; else they run one step at a
// time (GemvArgs::mma_serial_tail, A/B runs).
// kRing > 0: instead, the warp keeps its next kRing steps of W in flight through a ring in shared memory
// (cp.async, the first ones issued before the wait on the previous kernel: no kernel writes W), refilling
// each slot once its step is multiplied; the same MMAs in the same order, so the same bits.
template <class TA, class TW, int kNT, bool kGuarded, int kRing>
__global__ void __launch_bounds__(kMmaThreads) mma_kernel(GemvArgs a, int splits) {
  constexpr int kE = kMmaE<TW>;
  constexpr int kStep = 4 * kE;                                  // columns per warp step
  constexpr int kX = kE * static_cast<int>(sizeof(TA)) / 16;     // 16-byte loads of x per lane and n-tile
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int split = static_cast<int>(blockIdx.x) % splits;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x / splits) * 16;
  const TW* w = static_cast<const TW*>(a.w);
  const TW* w_lo = w + min(row0 + g, a.n - 1) * a.k + t * kE;      // past the end: recompute the last row
  const TW* w_hi = w + min(row0 + 8 + g, a.n - 1) * a.k + t * kE;
  const int all_steps = static_cast<int>(a.k / kStep), per_split = (all_steps + splits - 1) / splits;
  const int steps = min(all_steps, (split + 1) * per_split);
  int s = split * per_split + warp;
  // W does not depend on the kernels before this one: pull the block's range into L2 while they finish.
  prefetch_block_l2(w + row0 * a.k + static_cast<std::int64_t>(split) * per_split * kStep,
                    a.k * static_cast<std::int64_t>(sizeof(TW)), static_cast<int>(min(std::int64_t{16}, a.n - row0)),
                    static_cast<std::int64_t>(max(0, min(per_split, all_steps - split * per_split))) * kStep *
                        static_cast<std::int64_t>(sizeof(TW)));
  // kRing: the warp's steps s + i · kMmaWarps (i < n) go through slot i % kRing: the lane's row g at
  // [slot][warp][0][lane], row g + 8 at [slot][warp][1][lane].
  extern __shared__ int4 ring[];
  const int n = kRing > 0 && s < steps ? (steps - s + kMmaWarps - 1) / kMmaWarps : 0;
  int4* mine = ring + warp * 64 + lane;
  const std::uint64_t policy = kRing > 0 ? evict_first_policy() : 0;
  auto issue = [&](int i) {  // step i into its slot; one commit group per step (empty past the last)
    if (i < n) {
      const std::int64_t col = static_cast<std::int64_t>(s + i * kMmaWarps) * kStep;
      int4* slot = mine + (i % (kRing > 0 ? kRing : 1)) * kMmaWarps * 64;
      cp_async16(slot, w_lo + col, policy);
      cp_async16(slot + 32, w_hi + col, policy);
    }
    cp_async_commit();
  };
  if constexpr (kRing > 0) {
#pragma unroll
    for (int i = 0; i < kRing; ++i) issue(i);
  }
  pdl_enter();
  const TA* xr[kNT];
  bool has_x[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int b = 8 * nt + g;
    has_x[nt] = b < a.batch;
    xr[nt] = static_cast<const TA*>(a.x) + (has_x[nt] ? b : 0) * a.x_stride + t * kE;
  }
  float c[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) c[nt][i] = 0.0f;

  // kU steps of this warp (s, s + kMmaWarps, …; with `guard`, only those before `steps`): every load
  // first, then the MMAs.
  auto steps_from = [&](int s, auto unroll, auto guard) {
    constexpr int kU = decltype(unroll)::value;
    constexpr bool kGuard = decltype(guard)::value;
    int4 lo[kU], hi[kU], xv[kU][kNT][kX];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const bool ok = !kGuard || s + u * kMmaWarps < steps;  // the same for the whole warp
      const std::int64_t col = static_cast<std::int64_t>(ok ? s + u * kMmaWarps : s) * kStep;
      const int4 zero = make_int4(0, 0, 0, 0);
      lo[u] = ok ? __ldcs(reinterpret_cast<const int4*>(w_lo + col)) : zero;
      hi[u] = ok ? __ldcs(reinterpret_cast<const int4*>(w_hi + col)) : zero;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int j = 0; j < kX; ++j)
          xv[u][nt][j] = ok && has_x[nt] ? __ldg(reinterpret_cast<const int4*>(xr[nt] + col) + j) : zero;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (kGuard && s + u * kMmaWarps >= steps) break;
      uint32_t wl[kE / 2], wh[kE / 2];
      to_pairs<TA, TW>(lo[u], wl);
      to_pairs<TA, TW>(hi[u], wh);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const uint32_t* xp = reinterpret_cast<const uint32_t*>(xv[u][nt]);
#pragma unroll
        for (int j = 0; j < kE / 4; ++j)
          mma16816<TA>(c[nt], wl[2 * j], wh[2 * j], wl[2 * j + 1], wh[2 * j + 1], xp[2 * j], xp[2 * j + 1]);
      }
    }
  };
  if constexpr (kRing > 0) {
    for (int i = 0; i < n; ++i) {
      const std::int64_t col = static_cast<std::int64_t>(s + i * kMmaWarps) * kStep;
      const int4 zero = make_int4(0, 0, 0, 0);
      int4 xv[kNT][kX];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int j = 0; j < kX; ++j)
          xv[nt][j] = has_x[nt] ? __ldg(reinterpret_cast<const int4*>(xr[nt] + col) + j) : zero;
      cp_async_wait<kRing - 1>();  // step i's group has landed (a lane reads only its own copies)
      const int4* slot = mine + (i % kRing) * kMmaWarps * 64;
      uint32_t wl[kE / 2], wh[kE / 2];
      to_pairs<TA, TW>(slot[0], wl);
      to_pairs<TA, TW>(slot[32], wh);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const uint32_t* xp = reinterpret_cast<const uint32_t*>(xv[nt]);
#pragma unroll
        for (int j = 0; j < kE / 4; ++j)
          mma16816<TA>(c[nt], wl[2 * j], wh[2 * j], wl[2 * j + 1], wh[2 * j + 1], xp[2 * j], xp[2 * j + 1]);
      }
      issue(i + kRing);  // the slot's values are in registers and used: refill it
    }
    s = steps;  // nothing left for the register loops below
  }
  for (; s + (kMmaUnroll - 1) * kMmaWarps < steps; s += kMmaUnroll * kMmaWarps)
    steps_from(s, std::integral_constant<int, kMmaUnroll>{}, std::false_type{});
  if constexpr (kGuarded) {
    // Fewer than kMmaUnroll steps are left: kMmaUnroll - 1 slots hold them (with kMmaUnroll slots the int8
    // kernel took 74 registers instead of 54, 3 blocks per SM instead of 4, and Qwen2.5-7B's down, 448
    // blocks, two waves: 25.1 → 29.5 µs on the H200; with 3 slots 56 registers).
    if (s < steps) steps_from(s, std::integral_constant<int, kMmaUnroll - 1>{}, std::true_type{});
  } else {
    for (; s < steps; s += kMmaWarps) steps_from(s, std::integral_constant<int, 1>{}, std::false_type{});
  }

  __shared__ float partial[kMmaWarps][kNT * 4][32];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][nt * 4 + i][lane] = c[nt][i];
  __syncthreads();
  // Warp v < kNT · 4 sums accumulator v (n-tile v / 4, element v % 4) over the block's warps into
  // partial[0][v], then over the cluster's blocks (every thread reaches the cluster barriers).
  const bool owner = warp < kNT * 4;
  float v = 0.0f;
  if (owner) {
#pragma unroll
    for (int w2 = 0; w2 < kMmaWarps; ++w2) v += partial[w2][warp][lane];
    partial[0][warp][lane] = v;
  }
#if __CUDA_ARCH__ >= 900
  if (splits > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (split == 0 && owner)
      for (int r = 1; r < splits; ++r) v += cluster.map_shared_rank(&partial[0][warp][lane], r)[0];
    cluster.sync();  // the other blocks keep their shared memory until the first has read it
  }
#endif
  if (!owner || split != 0) return;
  const std::int64_t row = row0 + g + (warp % 4 >= 2 ? 8 : 0);
  const int b = 8 * (warp / 4) + 2 * t + warp % 2;
  if (row >= a.n || b >= a.batch) return;
  const float scale = a.scale ? a.scale[row] : 1.0f;
  const float add = a.bias ? to_f(static_cast<const TA*>(a.bias)[row]) : 0.0f;
  static_cast<TA*>(a.y)[b * a.y_stride + row] = from_f<TA>(fmaf(v, scale, add));
}

bool mma_applies(const GemvArgs& a) {
  if (a.dtype == DType::f32) return false;
  const std::int64_t step = a.weight == WeightType::act ? 32 : 64;
  return a.k % step == 0 && aligned16(a.w) && aligned16(a.x) && (a.x_stride * 2) % 16 == 0 &&
         device_attribute<cudaDevAttrComputeCapabilityMajor>("gemv") >= 8;
}

// Splits of K per 16-row tile (sm_90 clusters): 2 for a matrix with fewer tiles than 2 per SM, else 1.
// H200: Qwen2.5-7B's down (224 tiles × 592 steps) 44.6 → 37.4 µs at batch 1; session 25, bench_gemv at
// batch 4, µs with 1 / 2 / 3 / 4 splits: int8 o 7.38 / 6.51 / 9.49 / 9.56, fp8 o 7.16 / 6.27, Llama-3-8B
// int8 o 9.27 / 8.05 (fewer tiles than 2 per SM, short K: the rule before session 25 left them at 1);
// qkv (288 and 384 tiles) is faster unsplit (int8 9.18 / 11.90), and more splits, or splits of a wide
// matrix, are slower (cluster scheduling). In the step (one A/B invocation, verified): int8 batch 4
// Qwen2.5-7B 3.149 → 3.087 ms, Llama-3-8B 3.598 → 3.407; fp8 batch 4 2.965 → 2.954, batch 1 2.814 → 2.821.
int mma_splits(const GemvArgs& a) {
  if (a.splits > 0) return a.splits;
  if (device_attribute<cudaDevAttrComputeCapabilityMajor>("gemv") < 9) return 1;
  const std::int64_t tiles = (a.n + 15) / 16, steps = a.k / (a.weight == WeightType::act ? 32 : 64);
  return tiles < 2 * sm_count() && (!a.mma_split_tall_only || steps >= 8 * kMmaUnroll * kMmaWarps) ? 2 : 1;
}

// Ring slots per warp: GemvArgs::mma_ring; -1 (default): none; -2: chosen by the rule below, a ring only for a small matrix — one block per
// 16-row tile, fewer tiles than 3 per SM and at most 16 steps per warp (qkv and o of Qwen2.5-7B and
// Llama-3-8B) —, of 4 steps for 1-byte W and 8 for 2-byte W. H200, bench_gemv qwen2.5-7b (2026-12-02
// 20:30 UTC), µs registers → ring 4 / 8 / 12 at batch 4: int8 qkv 9.57 → 8.34 / 10.01 / 11.75, o 7.38 →
// 6.22 / 7.60 / 6.85; fp8 qkv 8.32 → 7.66, o 7.20 → 5.98 (ring 4); bf16 qkv 14.91 → 12.31, o 12.85 →
// 10.48 (ring 8); the same at batch 1. The large ones lose with a ring (int8 gate_up 40.7 → 41.4 / 53.5,
// down 24.4 → 29.2, lm_head 152 → 166 at ring 4): fewer resident blocks, no more bandwidth.
int mma_ring(const GemvArgs& a, int splits) {
  if (a.mma_ring == -1) return 0;  // the default: registers (the rule below is not yet measured in the step)
  if (a.mma_ring >= 0) {
    if (a.mma_ring != 0 && a.mma_ring != 4 && a.mma_ring != 8 && a.mma_ring != 12)
      throw Error(cat("gemv: the mma kernel's ring holds 0, 4, 8 or 12 steps, not ", a.mma_ring));
    return a.mma_ring;
  }
  const std::int64_t tiles = (a.n + 15) / 16, steps = a.k / (a.weight == WeightType::act ? 32 : 64);
  if (splits != 1 || tiles >= 3 * sm_count() || steps > 16 * kMmaWarps) return 0;
  return a.weight == WeightType::act ? 8 : 4;
}

template <class TA, class TW>
void launch_mma(const GemvArgs& a, Stream stream) {
  const int splits = mma_splits(a), ring = mma_ring(a, splits);
  const LaunchShape shape{dim3(static_cast<unsigned>((a.n + 15) / 16 * splits)), dim3(kMmaThreads),
                          mma_ring_bytes(ring), static_cast<unsigned>(splits)};
  auto run = [&](auto guarded, auto ring_tag) {
    constexpr bool kGuarded = decltype(guarded)::value;
    constexpr int kRing = decltype(ring_tag)::value;
    auto go = [&](auto kernel) {
      if (shape.smem > 48 * 1024) {  // above the default limit of dynamic shared memory: opt in
        const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   static_cast<int>(shape.smem));
        if (e != cudaSuccess) throw Error(cat("gemv mma kernel: shared memory: ", cudaGetErrorString(e)));
      }
      launch_kernel("gemv mma kernel", kernel, shape, stream, a, splits);
    };
    if (a.batch <= 8)
      go(mma_kernel<TA, TW, 1, kGuarded, kRing>);
    else
      go(mma_kernel<TA, TW, 2, kGuarded, kRing>);
  };
  switch (ring) {  // the tail switch concerns the register loops only
    case 4: return run(std::true_type{}, std::integral_constant<int, 4>{});
    case 8: return run(std::true_type{}, std::integral_constant<int, 8>{});
    case 12: return run(std::true_type{}, std::integral_constant<int, 12>{});
    default:
      if (a.mma_serial_tail) return run(std::false_type{}, std::integral_constant<int, 0>{});
      run(std::true_type{}, std::integral_constant<int, 0>{});
  }
}

template <class T, class TW, int kE>
__global__ void dequantize_typed(T* out, const TW* q, const float* scale, std::int64_t cols, std::int64_t total) {
  pdl_enter();
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx * kE >= total) return;
  const std::int64_t first = idx * kE, row = first / cols;  // kE divides cols: one row per chunk
  const float s = scale[row];
  const Vec<TW, kE> v = reinterpret_cast<const Vec<TW, kE>*>(q)[idx];
  float f[kE];
  weights_to_float<TW, kE>(v, f);
  constexpr int kS = 16 / sizeof(T);  // elements per 16-byte store
  if constexpr (kE % kS == 0) {       // the launcher checked that out is 16-byte aligned
#pragma unroll
    for (int j = 0; j < kE / kS; ++j) {
      Vec<T, kS> o;
#pragma unroll
      for (int i = 0; i < kS; ++i) o.v[i] = from_f<T>(f[j * kS + i] * s);
      reinterpret_cast<Vec<T, kS>*>(out + first)[j] = o;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kE; ++i) out[first + i] = from_f<T>(f[i] * s);
  }
}

template <class T, class TW>
void launch_dequantize(void* out, const void* q, const float* scale, std::int64_t rows, std::int64_t cols,
                       Stream stream) {
  const std::int64_t total = rows * cols;
  auto run = [&](auto e) {
    constexpr int kE = decltype(e)::value;
    const std::int64_t threads = total / kE, blocks = (threads + 255) / 256;
    launch_kernel("dequantize kernel", dequantize_typed<T, TW, kE>, {dim3(static_cast<unsigned>(blocks)), dim3(256)}, stream,
                  static_cast<T*>(out), static_cast<const TW*>(q), scale, cols, total);
  };
  if (cols % 16 == 0 && aligned16(q) && aligned16(out))
    run(std::integral_constant<int, 16>{});
  else
    run(std::integral_constant<int, 1>{});
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

GemvKernel gemv_kernel(const GemvArgs& a) {
  if (a.kernel == GemvKernel::simt) return GemvKernel::simt;
  // Automatic: int8 weights at batch 1 stream faster on CUDA cores (H200, Qwen2.5-7B: TPOT 2.932 ms vs
  // 2.982 on tensor cores), and so do model-dtype weights (bench_gemv, gate_up: 62.8 vs 67.8 µs); fp8
  // weights (whose conversion costs the CUDA cores more: 3.260 vs 2.941 ms; with simt's K split still
  // 2.992 vs 2.920, Llama-3-8B 3.323 vs 3.284) and every larger batch run on tensor cores where they apply.
  if (a.kernel == GemvKernel::automatic && a.weight != WeightType::fp8_e4m3 && a.batch == 1) return GemvKernel::simt;
  if (mma_applies(a)) return GemvKernel::mma;
  if (a.kernel == GemvKernel::mma)
    throw Error(cat("gemv: the mma kernel needs bf16/fp16 activations, K a multiple of ",
                    a.weight == WeightType::act ? 32 : 64, " (K = ", a.k,
                    "), 16-byte aligned W and x rows and a GPU of compute capability 8.0 or later"));
  return GemvKernel::simt;
}

int gemv_mma_splits(const GemvArgs& a) { return mma_splits(a); }

GemvKernel parse_gemv_kernel(const char* name) {
  if (std::strcmp(name, "auto") == 0) return GemvKernel::automatic;
  if (std::strcmp(name, "simt") == 0) return GemvKernel::simt;
  if (std::strcmp(name, "mma") == 0) return GemvKernel::mma;
  throw Error(cat("gemv kernel: unknown name '", name, "' (expected auto, simt or mma)"));
}

void gemv(const GemvArgs& a, Stream stream) {
  if (a.batch < 1 || a.batch > kGemvMaxRows) throw Error(cat("gemv: batch ", a.batch, " outside [1, ", kGemvMaxRows, "]"));
  if (a.n <= 0 || a.k <= 0) return;
  if (!a.x || !a.w || !a.y) throw Error("gemv: null x, w or y");
  if (a.weight != WeightType::act && !a.scale) throw Error("gemv: quantized weights need their scales");
  if (a.splits < 0 || a.splits > 8) throw Error(cat("gemv: splits ", a.splits, " outside [0, 8]"));
  const bool mma = gemv_kernel(a) == GemvKernel::mma;
  if (mma && a.splits > 1 && device_attribute<cudaDevAttrComputeCapabilityMajor>("gemv") < 9)
    throw Error("gemv: split K (clusters) needs a GPU of compute capability 9.0 or later");
  if (!mma && a.splits > 0 && (a.splits & (a.splits - 1)) != 0)
    throw Error(cat("gemv: the simt kernel splits K over 1, 2, 4 or 8 warps, not ", a.splits));
  dispatch(a.dtype, [&](auto tag) {
    using TA = typename decltype(tag)::type;
    auto run = [&](auto wtag) {
      using TW = typename decltype(wtag)::type;
      if constexpr (!std::is_same_v<TA, float>) {
        if (mma) return launch_mma<TA, TW>(a, stream);
      }
      launch_batch<TA, TW>(a, stream);
    };
    switch (a.weight) {
      case WeightType::act: return run(Tag<TA>{});
      case WeightType::int8: return run(Tag<std::int8_t>{});
      case WeightType::fp8_e4m3: return run(Tag<__nv_fp8_e4m3>{});
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
