#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "decode_attention_mma.cuh"

// Flash-decoding in three launches, all sized by the plan alone:
//   1. scores: per (split, kv head group, b) block, Q·Kᵀ for the split's columns, rounded like the
//      eager path, stored (in the dtype, which holds them exactly) in the workspace; the split's max
//      and Σexp per query head. One thread per column reads the column's whole K row (16-byte loads,
//      all in flight) and dots it with every query head of the group (Q in shared memory): K is read
//      once for the group and no shuffle sits in the inner loop.
//   2. pv: per block, the row's global max/sum from the split partials, probs = dtype(exp(s − m) / l)
//      (HF rounds probs before ·V, which needs the global normaliser: hence the separate pass), staged
//      per piece of columns in shared memory, and Σ probs·V over the split's columns in float: a
//      column's V row is read once by D/16-byte lanes for all query heads of the group.
//   3. combine: Σ over splits, rounded to the dtype (skipped when there is a single split).
// An fp8 cache (TKV = e4m3) is read with the same lanes and columns, 8 bytes per load instead of 16
// (as many elements per load as the dtype's 16 bytes); each element is dequantized with its head's scale and
// rounded to the dtype before the math, as KvCache's dequantized read gives the plain path.
namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kCols = 2;               // scores pass: columns per thread in flight
constexpr int kBuf = 8;                // scores pass: 16-byte vectors per column in flight
constexpr int kPerThread = 8;          // pv pass: columns per thread per piece (V loads in flight)
constexpr int kMaxPiece = 256;         // pv pass: columns per piece at most
constexpr std::int64_t kMinChunk = 64;
constexpr int kBlocksPerSm = 3;        // resident blocks per SM at ~170 registers per thread (ptxas -v)

struct Work {
  void* scores;   // [B, Hq, T_max] in the dtype
  float* pmax;    // [B, Hq, splits]
  float* psum;    // [B, Hq, splits]
  float* pacc;    // [B, Hq, splits, D] (splits > 1)
};

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

Work carve(void* ws, const DecodeAttnArgs& a, int splits) {
  char* p = static_cast<char*>(ws);
  const std::size_t rows = static_cast<std::size_t>(a.batch) * a.heads_q;
  Work w{};
  w.scores = p;
  p += align256(rows * a.max_len * sizeof(float));  // room for any dtype
  w.pmax = reinterpret_cast<float*>(p);
  p += align256(rows * splits * sizeof(float));
  w.psum = reinterpret_cast<float*>(p);
  p += align256(rows * splits * sizeof(float));
  w.pacc = reinterpret_cast<float*>(p);
  return w;
}

// Block coordinates shared by the two passes.
struct Coords {
  int split, kvh, h0, ng, b;
  std::int64_t t0, t1;
};

__device__ __forceinline__ Coords coords(const DecodeAttnArgs& a, std::int64_t chunk, int groups, int group_size) {
  Coords c;
  c.split = blockIdx.x;
  c.kvh = blockIdx.y / groups;
  const int grp = blockIdx.y % groups, g = a.heads_q / a.heads_kv;
  c.h0 = c.kvh * g + grp * group_size;
  c.ng = min(group_size, g - grp * group_size);
  c.b = blockIdx.z;
  c.t0 = c.split * chunk;
  c.t1 = min(c.t0 + chunk, a.max_len);
  return c;
}

template <int kBytes>
struct RawOf;
template <>
struct RawOf<16> {
  using type = uint4;
};
template <>
struct RawOf<8> {
  using type = uint2;
};
template <>
struct RawOf<4> {
  using type = unsigned int;
};
// kVec cache elements (TKV: the dtype or e4m3) in one aligned load.
template <class TKV, int kVec>
using KvRaw = typename RawOf<kVec * static_cast<int>(sizeof(TKV))>::type;

template <class TKV>
constexpr bool kIsFp8 = std::is_same_v<TKV, __nv_fp8_e4m3>;

// kVec cache elements as floats. e4m3 pairs go through the paired conversion, times the head's scale,
// rounded to the dtype T: the values KvCache::read_keys / read_values hand the plain path, so the fp8
// cache keeps the dtype cache's contract (the eager formula's numbers up to float summation order).
template <class T, class TKV, int kVec>
__device__ __forceinline__ void to_floats(const KvRaw<TKV, kVec>& raw, float scale, float (&out)[kVec]) {
  if constexpr (kIsFp8<TKV>) {
    const auto* pairs = reinterpret_cast<const __nv_fp8x2_e4m3*>(&raw);
#pragma unroll
    for (int j = 0; j < kVec / 2; ++j) {
      const float2 f = static_cast<float2>(pairs[j]);
      out[2 * j] = round_f<T>(f.x * scale);
      out[2 * j + 1] = round_f<T>(f.y * scale);
    }
  } else {
    const TKV* e = reinterpret_cast<const TKV*>(&raw);
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = to_f(e[j]);
  }
}

// The row's scale of kv head `kvh` (1 for a cache in the dtype).
template <class TKV>
__device__ __forceinline__ float kv_scale(const float* scales, const DecodeAttnArgs& a, int b, int kvh) {
  if constexpr (kIsFp8<TKV>) return scales[b * a.scale_stride_b + kvh];
  return 1.0f;
}

template <class T, class TKV, int NG>
__global__ void __launch_bounds__(kThreads) scores_kernel(DecodeAttnArgs a, std::int64_t chunk, int groups,
                                                          int group_size, Work w, int splits) {
  pdl_enter();
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kLoads = kBuf * sizeof(T) / sizeof(TKV);  // loads in flight per column: 128 bytes either way
  using Raw = KvRaw<TKV, kVec>;
  const Coords c = coords(a, chunk, groups, group_size);
  const int d = a.head_dim, steps = d / kVec;
  const std::int64_t t_max = a.max_len;

  extern __shared__ float4 q_shared[];  // [NG, D] as float (rows ≥ ng are 0)
  float* qs = reinterpret_cast<float*>(q_shared);
  const T* qrow = static_cast<const T*>(a.q) + (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0) * d;
  for (int i = threadIdx.x; i < NG * d; i += kThreads) qs[i] = i / d < c.ng ? to_f(qrow[i]) : 0.0f;
  __syncthreads();

  const TKV* kb = static_cast<const TKV*>(a.k) + c.b * a.kv_stride_b + c.kvh * a.kv_stride_h;
  const float k_scale = kv_scale<TKV>(a.k_scale, a, c.b, c.kvh);
  const std::uint8_t* valid = a.valid + c.b * a.valid_stride_b;
  T* srow = static_cast<T*>(w.scores) + (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0) * t_max;
  float m[NG], l[NG];
#pragma unroll
  for (int g = 0; g < NG; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
  }
  for (std::int64_t base = c.t0 + threadIdx.x; base < c.t1; base += kThreads * kCols) {
    bool in[kCols], ok[kCols];
    const Raw* row[kCols];
#pragma unroll
    for (int u = 0; u < kCols; ++u) {
      const std::int64_t t = base + u * kThreads;
      in[u] = t < c.t1;
      row[u] = reinterpret_cast<const Raw*>(kb + (in[u] ? t : c.t0) * a.kv_stride_t);
      ok[u] = in[u] && valid[in[u] ? t : c.t0] != 0;
    }
    float dot[kCols][NG];
#pragma unroll
    for (int u = 0; u < kCols; ++u)
#pragma unroll
      for (int g = 0; g < NG; ++g) dot[u][g] = 0.0f;
    for (int s0 = 0; s0 < steps; s0 += kLoads) {
      Raw raw[kCols][kLoads];  // all loads of this step issued before any math
#pragma unroll
      for (int u = 0; u < kCols; ++u)
#pragma unroll
        for (int i = 0; i < kLoads; ++i)
          if (in[u] && s0 + i < steps) raw[u][i] = __ldg(row[u] + s0 + i);
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        if (s0 + i >= steps) break;
        float kf[kCols][kVec];
#pragma unroll
        for (int u = 0; u < kCols; ++u) to_floats<T, TKV, kVec>(raw[u][i], k_scale, kf[u]);
#pragma unroll
        for (int g = 0; g < NG; ++g) {
          const float4* qv = reinterpret_cast<const float4*>(qs + g * d + (s0 + i) * kVec);
#pragma unroll
          for (int j = 0; j < kVec; j += 4) {
            const float4 q4 = qv[j / 4];
#pragma unroll
            for (int u = 0; u < kCols; ++u)
            {
              dot[u][g] = fmaf(q4.x, kf[u][j], dot[u][g]);
              dot[u][g] = fmaf(q4.y, kf[u][j + 1], dot[u][g]);
              dot[u][g] = fmaf(q4.z, kf[u][j + 2], dot[u][g]);
              dot[u][g] = fmaf(q4.w, kf[u][j + 3], dot[u][g]);
            }
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kCols; ++u) {
      if (!in[u]) continue;
      const std::int64_t t = base + u * kThreads;
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        if (g >= c.ng) continue;
        const float qk = dot[u][g];  // Σ q·k
        const float sc = ok[u] ? round_f<T>(round_f<T>(qk) * a.scale) : Num<T>::lowest();
        srow[g * t_max + t] = from_f<T>(sc);
        push(m[g], l[g], sc);
      }
    }
  }
  // (max, Σexp) of the split per head: warps, then across warps.
  __shared__ float sm[kWarps][NG], sl[kWarps][NG];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int g = 0; g < NG; ++g) {
    for (int off = 16; off > 0; off >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m[g], off), l2 = __shfl_xor_sync(0xffffffffu, l[g], off);
      merge(m[g], l[g], m2, l2);
    }
    if (lane == 0) {
      sm[warp][g] = m[g];
      sl[warp][g] = l[g];
    }
  }
  __syncthreads();
  if (threadIdx.x < c.ng) {
    const int g = threadIdx.x;
    float mm = -INFINITY, ll = 0.0f;
    for (int wi = 0; wi < kWarps; ++wi) merge(mm, ll, sm[wi][g], sl[wi][g]);
    const std::int64_t at = (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0 + g) * splits + c.split;
    w.pmax[at] = mm;
    w.psum[at] = ll;
  }
}

template <class T, class TKV, int NG>
__global__ void __launch_bounds__(kThreads) pv_kernel(DecodeAttnArgs a, std::int64_t chunk, int groups,
                                                      int group_size, Work w, int splits) {
  pdl_enter();
  constexpr int kVec = 16 / sizeof(T);
  using Raw = KvRaw<TKV, kVec>;
  constexpr int kNgp = (NG + 3) / 4 * 4;  // probs row stride (float4 reads)
  const Coords c = coords(a, chunk, groups, group_size);
  const int d = a.head_dim, lanes = d / kVec, sub = threadIdx.x % lanes, cg = threadIdx.x / lanes;
  const int ncg = kThreads / lanes, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int per = min(kPerThread, kMaxPiece / ncg), piece = per * ncg;
  const std::int64_t t_max = a.max_len, row0 = static_cast<std::int64_t>(c.b) * a.heads_q + c.h0;

  __shared__ float gmax[NG], gsum[NG];
  __shared__ float4 probs_v[kMaxPiece * kNgp / 4];  // [piece, kNgp]
  float* probs = reinterpret_cast<float*>(probs_v);
  for (int g = warp; g < c.ng; g += kWarps) {
    const float* pm = w.pmax + (row0 + g) * splits;
    const float* ps = w.psum + (row0 + g) * splits;
    float m = -INFINITY;
    for (int i = lane; i < splits; i += 32) m = fmaxf(m, pm[i]);
    m = warp_max(m);
    float l = 0.0f;
    for (int i = lane; i < splits; i += 32) l += ps[i] * expf(pm[i] - m);
    l = warp_sum(l);
    if (lane == 0) {
      gmax[g] = m;
      gsum[g] = l;
    }
  }
  __syncthreads();

  float acc[NG][kVec];
#pragma unroll
  for (int g = 0; g < NG; ++g)
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[g][j] = 0.0f;
  const TKV* vb = static_cast<const TKV*>(a.v) + c.b * a.kv_stride_b + c.kvh * a.kv_stride_h;
  const float v_scale = kv_scale<TKV>(a.v_scale, a, c.b, c.kvh);
  const T* srow = static_cast<const T*>(w.scores) + row0 * t_max;
  for (std::int64_t p0 = c.t0; p0 < c.t1; p0 += piece) {
    const int np = static_cast<int>(min(static_cast<std::int64_t>(piece), c.t1 - p0));
    Raw raw[kPerThread];  // this thread's V slices of the piece, in flight while probs are computed
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int col = cg + u * ncg;
      if (u < per && col < np) raw[u] = __ldg(reinterpret_cast<const Raw*>(vb + (p0 + col) * a.kv_stride_t) + sub);
    }
    for (int i = threadIdx.x; i < np * NG; i += kThreads) {
      const int g = i / np, col = i % np;
      probs[col * kNgp + g] =
          g < c.ng ? round_f<T>(expf(to_f(srow[g * t_max + p0 + col]) - gmax[g]) / gsum[g]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int col = cg + u * ncg;
      if (u >= per || col >= np) continue;
      float p[kNgp];
#pragma unroll
      for (int g = 0; g < kNgp; g += 4) {
        const float4 p4 = probs_v[(col * kNgp + g) / 4];
        p[g] = p4.x;
        p[g + 1] = p4.y;
        p[g + 2] = p4.z;
        p[g + 3] = p4.w;
      }
      bool any = false;
#pragma unroll
      for (int g = 0; g < NG; ++g) any |= p[g] != 0.0f;
      if (!any) continue;  // masked columns weigh exactly 0 (and unwritten V may hold anything)
      float vf[kVec];
      to_floats<T, TKV, kVec>(raw[u], v_scale, vf);
#pragma unroll
      for (int g = 0; g < NG; ++g)
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[g][j] += p[g] * vf[j];
    }
    __syncthreads();  // the next piece overwrites probs
  }
  // Column groups of one warp, then the warps through shared memory.
  for (int off = lanes; off < 32; off <<= 1) {
#pragma unroll
    for (int g = 0; g < NG; ++g)
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], off);
  }
  extern __shared__ float red[];  // [kWarps, ng, D]
  if (lane < lanes) {
#pragma unroll
    for (int g = 0; g < NG; ++g)
      if (g < c.ng)
#pragma unroll
        for (int j = 0; j < kVec; ++j) red[(warp * c.ng + g) * d + sub * kVec + j] = acc[g][j];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < c.ng * d; idx += kThreads) {
    float s = 0.0f;
    for (int wi = 0; wi < kWarps; ++wi) s += red[wi * c.ng * d + idx];
    const int g = idx / d, k = idx % d;
    if (splits == 1)
      static_cast<T*>(a.out)[(row0 + g) * d + k] = from_f<T>(s);
    else
      w.pacc[((row0 + g) * splits + c.split) * d + k] = s;
  }
}

// Block (h, b): Σ over splits, one thread per dimension.
template <class T>
__global__ void combine_kernel(DecodeAttnArgs a, Work w, int splits) {
  pdl_enter();
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * a.heads_q + blockIdx.x;
  for (int k = threadIdx.x; k < a.head_dim; k += blockDim.x) {
    float s = 0.0f;
    for (int i = 0; i < splits; ++i) s += w.pacc[(row * splits + i) * a.head_dim + k];
    static_cast<T*>(a.out)[row * a.head_dim + k] = from_f<T>(s);
  }
}

// Calls f(std::integral_constant<int, NG>) with NG the smallest of 1, 2, 4, 8 that holds `group_size` heads.
template <class F>
void with_group(int group_size, F&& f) {
  if (group_size <= 1) return f(std::integral_constant<int, 1>{});
  if (group_size <= 2) return f(std::integral_constant<int, 2>{});
  if (group_size <= 4) return f(std::integral_constant<int, 4>{});
  f(std::integral_constant<int, kMaxGroup>{});
}

template <class T, class TKV>
void check_args(const DecodeAttnArgs& a) {
  constexpr int kVec = 16 / sizeof(T);
  const int lanes = a.head_dim / kVec;
  if (a.head_dim % kVec != 0 || lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0)
    throw Error(cat("decode_attention kernel: head_dim ", a.head_dim, " must be ", kVec,
                    " × a power of two up to 32 for this dtype"));
  if (a.heads_kv <= 0 || a.heads_q % a.heads_kv != 0)
    throw Error(cat("decode_attention kernel: ", a.heads_q, " query heads are not a multiple of ", a.heads_kv,
                    " kv heads"));
  if (!a.q || !a.k || !a.v || !a.valid || !a.out) throw Error("decode_attention kernel: null pointer argument");
  if (kIsFp8<TKV> != (a.k_scale && a.v_scale))
    throw Error("decode_attention kernel: an fp8 cache needs k and v scales (and only an fp8 cache takes them)");
  const std::size_t load = kVec * sizeof(TKV);  // bytes per K/V load
  auto aligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % load == 0; };
  if (!aligned16(a.q) || !aligned(a.k) || !aligned(a.v) || a.kv_stride_b % kVec != 0 || a.kv_stride_h % kVec != 0 ||
      a.kv_stride_t % kVec != 0)
    throw Error(cat("decode_attention kernel: q must be 16-byte aligned, k/v ", load,
                    "-byte aligned with strides a multiple of ", kVec, " elements"));
}

// Calls f(Tag<TKV>{}) with TKV the cache's element type for activations T.
template <class T, class F>
void dispatch_kv(KvType kv, F&& f) {
  if (kv == KvType::fp8_e4m3) return f(Tag<__nv_fp8_e4m3>{});
  f(Tag<T>{});
}

}  // namespace

namespace {

// LLMBENCH_ATTN_WAVE=0 keeps the mma plan's splits even where the grid's clusters are not all resident at
// once (A/B runs); unset or 1: fewer splits until they are. Read at every plan.
bool one_wave() {
  const char* v = std::getenv("LLMBENCH_ATTN_WAVE");
  return !(v && std::strcmp(v, "0") == 0);
}

DecodeAttnPlan mma_plan_of(std::int64_t max_len, std::int64_t splits) {
  DecodeAttnPlan p;
  p.kernel = DecodeAttnKernel::mma;
  p.chunk = ((max_len + splits - 1) / splits + kMmaTile - 1) / kMmaTile * kMmaTile;
  p.splits = static_cast<int>((max_len + p.chunk - 1) / p.chunk);  // no empty split
  return p;
}

// The mma kernel's plan: about two resident blocks per SM (256 threads, ~128 registers each), at
// least kMinChunk columns per split, chunks a multiple of its 16-column tile; then fewer splits while
// the device cannot hold all `units` clusters at once (a second wave of clusters costs a whole kernel
// length: H200, Llama-3-8B batch 4, 8 splits × 32 clusters of 8). `fits` is false where it needs more
// splits or longer chunks than a cluster holds.
DecodeAttnPlan plan_mma(DType dtype, int head_dim, std::int64_t units, std::int64_t max_len, int sm_count,
                        int force_splits, bool& fits) {
  const std::int64_t target = 2 * static_cast<std::int64_t>(std::max(sm_count, 1));
  std::int64_t splits = std::max<std::int64_t>(1, target / units);
  splits = std::min(splits, std::max<std::int64_t>(1, (max_len + kMinChunk - 1) / kMinChunk));
  splits = std::max(splits, (max_len + kMmaMaxChunk - 1) / kMmaMaxChunk);
  splits = std::min<std::int64_t>(splits, kMmaMaxSplits);
  if (force_splits > 0) splits = std::min<std::int64_t>(force_splits, max_len);
  DecodeAttnPlan p = mma_plan_of(max_len, splits);
  fits = p.splits <= kMmaMaxSplits && p.chunk <= kMmaMaxChunk;
  if (!fits || force_splits > 0 || !one_wave()) return p;
  while (p.splits > 1) {
    const int resident = mma_max_active_clusters(dtype, head_dim, p.chunk, p.splits);
    if (resident <= 0 || units <= resident) break;
    const DecodeAttnPlan fewer = mma_plan_of(max_len, p.splits - 1);
    if (fewer.chunk > kMmaMaxChunk || fewer.splits >= p.splits) break;
    p = fewer;
  }
  return p;
}

}  // namespace

DecodeAttnPlan plan_decode_attention(DType dtype, int batch, int heads_q, int heads_kv, int head_dim,
                                     std::int64_t max_len, int sm_count, int force_splits, DecodeAttnKernel kernel) {
  if (batch <= 0 || heads_q <= 0 || heads_kv <= 0 || head_dim <= 0 || max_len <= 0 || heads_q % heads_kv != 0)
    throw Error(cat("decode_attention plan: bad shape B=", batch, " Hq=", heads_q, " Hkv=", heads_kv, " D=", head_dim,
                    " T=", max_len));
  const Layout l = layout(heads_q, heads_kv);
  const std::int64_t units = static_cast<std::int64_t>(batch) * heads_kv * l.groups;
  if (kernel != DecodeAttnKernel::split) {
    bool fits = false;
    const bool supported = mma_decode_attention_supported(dtype, head_dim);
    const DecodeAttnPlan p = plan_mma(dtype, head_dim, units, max_len, sm_count, force_splits, fits);
    if (supported && fits) return p;
    if (kernel == DecodeAttnKernel::mma)
      throw Error(cat("decode_attention: the mma kernel does not apply here (it needs bf16 or fp16, head_dim 64 or "
                      "128, compute capability 9.0+ and at most ",
                      kMmaMaxSplits, " splits of ", kMmaMaxChunk, " columns; head_dim ", head_dim, ", ", max_len,
                      " columns in ", p.splits, " splits of ", p.chunk, ")"));
  }
  // One wave: as many splits as keep every block resident at once (a second, partial wave would idle
  // most SMs for its length).
  const std::int64_t target = kBlocksPerSm * static_cast<std::int64_t>(std::max(sm_count, 1));
  std::int64_t splits = std::max<std::int64_t>(1, target / units);
  splits = std::min(splits, std::max<std::int64_t>(1, (max_len + kMinChunk - 1) / kMinChunk));
  if (force_splits > 0) splits = std::min<std::int64_t>(force_splits, max_len);
  DecodeAttnPlan p;
  p.kernel = DecodeAttnKernel::split;
  p.chunk = (max_len + splits - 1) / splits;
  p.splits = static_cast<int>((max_len + p.chunk - 1) / p.chunk);  // no empty split
  const std::size_t rows = static_cast<std::size_t>(batch) * heads_q;
  p.workspace_bytes = align256(rows * max_len * sizeof(float)) + 2 * align256(rows * p.splits * sizeof(float)) +
                      (p.splits > 1 ? align256(rows * p.splits * head_dim * sizeof(float)) : 0);
  return p;
}

int decode_attention_resident_clusters(DType dtype, int head_dim, const DecodeAttnPlan& plan) {
  if (plan.kernel != DecodeAttnKernel::mma) return 0;
  return mma_max_active_clusters(dtype, head_dim, plan.chunk, plan.splits);
}

void decode_attention(const DecodeAttnArgs& a, const DecodeAttnPlan& plan, void* workspace, Stream stream) {
  if (a.batch <= 0) return;
  if (plan.splits < 1 || plan.chunk < 1 || plan.chunk * plan.splits < a.max_len ||
      plan.chunk * (plan.splits - 1) >= a.max_len)
    throw Error("decode_attention kernel: the plan does not cover the cache length");
  if (plan.kernel == DecodeAttnKernel::mma) {
    dispatch(a.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      dispatch_kv<T>(a.kv, [&](auto kv_tag) { check_args<T, typename decltype(kv_tag)::type>(a); });
    });
    return mma_decode_attention(a, plan.chunk, plan.splits, stream);
  }
  if (plan.kernel != DecodeAttnKernel::split) throw Error("decode_attention kernel: the plan names no kernel");
  if (!workspace) throw Error("decode_attention kernel: null workspace");
  const Layout l = layout(a.heads_q, a.heads_kv);
  const Work w = carve(workspace, a, plan.splits);
  const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(a.heads_kv * l.groups),
                  static_cast<unsigned>(a.batch));
  const std::size_t red_bytes = static_cast<std::size_t>(kWarps) * l.group_size * a.head_dim * sizeof(float);
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (red_bytes > 32 * 1024) throw Error(cat("decode_attention kernel: head_dim ", a.head_dim, " is too large"));
    dispatch_kv<T>(a.kv, [&](auto kv_tag) {
      using TKV = typename decltype(kv_tag)::type;
      check_args<T, TKV>(a);
      with_group(l.group_size, [&](auto ng) {
        constexpr int NG = decltype(ng)::value;
        const std::size_t q_bytes = static_cast<std::size_t>(NG) * a.head_dim * sizeof(float);
        launch_kernel("decode_attention scores kernel", scores_kernel<T, TKV, NG>, {grid, kThreads, q_bytes}, stream, a,
                      plan.chunk, l.groups, l.group_size, w, plan.splits);
        launch_kernel("decode_attention pv kernel", pv_kernel<T, TKV, NG>, {grid, kThreads, red_bytes}, stream, a,
                      plan.chunk, l.groups, l.group_size, w, plan.splits);
      });
    });
    if (plan.splits > 1) {
      launch_kernel("decode_attention combine kernel", combine_kernel<T>,
                    {dim3(a.heads_q, a.batch), dim3(std::min(a.head_dim, 1024))}, stream, a, w, plan.splits);
    }
  });
}

int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>("sm_count"); }

}  // namespace llmbench::cuda
