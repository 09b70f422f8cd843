#include <algorithm>
#include <cmath>

#include "common.cuh"

// Flash-decoding in three launches, all sized by the plan alone:
//   1. scores: per (split, kv head group, b) block, Q·Kᵀ for the split's columns, rounded like the
//      eager path, stored in the workspace; the split's max and Σexp per query head.
//   2. pv: per block, the row's global max/sum from the split partials, probs = dtype(exp(s − m) / l)
//      (HF rounds probs before ·V, which needs the global normaliser: hence the separate pass), and
//      Σ probs·V over the split's columns in float.
//   3. combine: Σ over splits, rounded to the dtype (skipped when there is a single split).
namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxGroup = 8;       // query heads per block sharing one kv head (register arrays)
constexpr int kUnroll = 4;         // columns per thread with loads in flight together
constexpr std::int64_t kMinChunk = 32;  // = columns in flight per block for bf16 D=128

struct Layout {
  int group_size = 1;   // query heads per block
  int groups = 1;       // blocks per kv head
};

Layout layout(int heads_q, int heads_kv) {
  const int g = heads_q / heads_kv;
  Layout l;
  l.groups = (g + kMaxGroup - 1) / kMaxGroup;
  l.group_size = (g + l.groups - 1) / l.groups;
  return l;
}

struct Work {
  float* scores;  // [B, Hq, T_max]
  float* pmax;    // [B, Hq, splits]
  float* psum;    // [B, Hq, splits]
  float* pacc;    // [B, Hq, splits, D] (splits > 1)
};

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

Work carve(void* ws, const DecodeAttnArgs& a, int splits) {
  char* p = static_cast<char*>(ws);
  const std::size_t rows = static_cast<std::size_t>(a.batch) * a.heads_q;
  Work w{};
  w.scores = reinterpret_cast<float*>(p);
  p += align256(rows * a.max_len * sizeof(float));
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

// `lanes` = D / kVec threads hold one column's D elements; blockDim / lanes columns are in flight.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) scores_kernel(DecodeAttnArgs a, std::int64_t chunk, int groups,
                                                          int group_size, Work w, int splits) {
  using V = Vec<T, kVec>;
  const Coords c = coords(a, chunk, groups, group_size);
  const int d = a.head_dim, lanes = d / kVec, sub = threadIdx.x % lanes, cg = threadIdx.x / lanes;
  const int ncg = kThreads / lanes;
  const std::int64_t t_max = a.max_len;

  float q[kMaxGroup][kVec];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g < c.ng) {
      const V qv = reinterpret_cast<const V*>(static_cast<const T*>(a.q) +
                                              (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0 + g) * d)[sub];
#pragma unroll
      for (int j = 0; j < kVec; ++j) q[g][j] = to_f(qv.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) q[g][j] = 0.0f;
    }
  }
  const T* kb = static_cast<const T*>(a.k) + c.b * a.kv_stride_b + c.kvh * a.kv_stride_h;
  const std::uint8_t* valid = a.valid + c.b * a.valid_stride_b;
  float* srow = w.scores + (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0) * t_max;
  // kUnroll columns per thread with all loads issued first; every thread runs the same number of
  // iterations so the shuffles see full warps. K is read for every in-range column (the cache is
  // allocated to T_max) so the load does not wait for the mask byte.
  for (std::int64_t base = c.t0; base < c.t1; base += static_cast<std::int64_t>(ncg) * kUnroll) {
    V kv[kUnroll];
    bool in[kUnroll], ok[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t t = base + cg + u * ncg;
      in[u] = t < c.t1;
      if (in[u]) {
        kv[u] = reinterpret_cast<const V*>(kb + t * a.kv_stride_t)[sub];
        ok[u] = valid[t] != 0;
      } else {
        ok[u] = false;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t t = base + cg + u * ncg;
      float dot[kMaxGroup];
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g) {
        dot[g] = 0.0f;
        if (in[u]) {
#pragma unroll
          for (int j = 0; j < kVec; ++j) dot[g] += q[g][j] * to_f(kv[u].v[j]);
        }
      }
      for (int off = lanes / 2; off > 0; off >>= 1) {
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], off);
      }
      if (in[u] && sub == 0) {
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          if (g < c.ng) {
            const float sc = ok[u] ? round_f<T>(round_f<T>(dot[g]) * a.scale) : Num<T>::lowest();
            srow[g * t_max + t] = sc;
          }
        }
      }
    }
  }
  __syncthreads();  // the block's scores are visible to all its threads
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int g = warp; g < c.ng; g += kWarps) {
    const float* sg = srow + g * t_max;
    float m = -INFINITY;
    for (std::int64_t t = c.t0 + lane; t < c.t1; t += 32) m = fmaxf(m, sg[t]);
    m = warp_max(m);
    float l = 0.0f;
    for (std::int64_t t = c.t0 + lane; t < c.t1; t += 32) l += expf(sg[t] - m);
    l = warp_sum(l);
    if (lane == 0) {
      const std::int64_t at = (static_cast<std::int64_t>(c.b) * a.heads_q + c.h0 + g) * splits + c.split;
      w.pmax[at] = m;
      w.psum[at] = l;
    }
  }
}

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) pv_kernel(DecodeAttnArgs a, std::int64_t chunk, int groups,
                                                      int group_size, Work w, int splits) {
  using V = Vec<T, kVec>;
  const Coords c = coords(a, chunk, groups, group_size);
  const int d = a.head_dim, lanes = d / kVec, sub = threadIdx.x % lanes, cg = threadIdx.x / lanes;
  const int ncg = kThreads / lanes, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t t_max = a.max_len, row0 = static_cast<std::int64_t>(c.b) * a.heads_q + c.h0;

  __shared__ float gmax[kMaxGroup], gsum[kMaxGroup];
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

  float acc[kMaxGroup][kVec];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[g][j] = 0.0f;
  const T* vb = static_cast<const T*>(a.v) + c.b * a.kv_stride_b + c.kvh * a.kv_stride_h;
  // Probabilities once per (head, column), written over the scores; the loop below only reads them.
  float* prow = w.scores + row0 * t_max;
  const std::int64_t len = c.t1 - c.t0;
  for (std::int64_t i = threadIdx.x; i < c.ng * len; i += kThreads) {
    const int g = static_cast<int>(i / len);
    float& s = prow[g * t_max + c.t0 + i % len];
    s = round_f<T>(expf(s - gmax[g]) / gsum[g]);
  }
  __syncthreads();
  for (std::int64_t base = c.t0 + cg; base < c.t1; base += static_cast<std::int64_t>(ncg) * kUnroll) {
    // Scores and V of kUnroll columns in flight at once; V does not wait for the probabilities.
    float sc[kUnroll][kMaxGroup];  // probabilities
    V vv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t t = base + u * ncg;
      if (t < c.t1) {
        vv[u] = reinterpret_cast<const V*>(vb + t * a.kv_stride_t)[sub];
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) sc[u][g] = g < c.ng ? prow[g * t_max + t] : 0.0f;
      } else {
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) sc[u][g] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float* p = sc[u];
      bool any = false;
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g) any |= p[g] != 0.0f;
      if (!any) continue;  // masked columns weigh exactly 0 (and unwritten V may hold anything)
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[g][j] += p[g] * to_f(vv[u].v[j]);
    }
  }
  // Column groups of one warp, then the warps through shared memory.
  for (int off = lanes; off < 32; off <<= 1) {
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], off);
  }
  extern __shared__ float red[];  // [kWarps, ng, D]
  if (lane < lanes) {
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g)
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
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * a.heads_q + blockIdx.x;
  for (int k = threadIdx.x; k < a.head_dim; k += blockDim.x) {
    float s = 0.0f;
    for (int i = 0; i < splits; ++i) s += w.pacc[(row * splits + i) * a.head_dim + k];
    static_cast<T*>(a.out)[row * a.head_dim + k] = from_f<T>(s);
  }
}

template <class T>
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
  if (!aligned16(a.q) || !aligned16(a.k) || !aligned16(a.v) || a.kv_stride_b % kVec != 0 ||
      a.kv_stride_h % kVec != 0 || a.kv_stride_t % kVec != 0)
    throw Error("decode_attention kernel: q/k/v must be 16-byte aligned with strides a multiple of 16 bytes");
}

}  // namespace

DecodeAttnPlan plan_decode_attention(int batch, int heads_q, int heads_kv, int head_dim, std::int64_t max_len,
                                     int sm_count) {
  if (batch <= 0 || heads_q <= 0 || heads_kv <= 0 || head_dim <= 0 || max_len <= 0 || heads_q % heads_kv != 0)
    throw Error(cat("decode_attention plan: bad shape B=", batch, " Hq=", heads_q, " Hkv=", heads_kv, " D=", head_dim,
                    " T=", max_len));
  const Layout l = layout(heads_q, heads_kv);
  const std::int64_t units = static_cast<std::int64_t>(batch) * heads_kv * l.groups;
  const std::int64_t target = 4 * static_cast<std::int64_t>(std::max(sm_count, 1));  // four blocks per SM
  std::int64_t splits = std::max<std::int64_t>(1, (target + units - 1) / units);
  splits = std::min(splits, std::max<std::int64_t>(1, (max_len + kMinChunk - 1) / kMinChunk));
  DecodeAttnPlan p;
  p.chunk = (max_len + splits - 1) / splits;
  p.splits = static_cast<int>((max_len + p.chunk - 1) / p.chunk);  // no empty split
  const std::size_t rows = static_cast<std::size_t>(batch) * heads_q;
  p.workspace_bytes = align256(rows * max_len * sizeof(float)) + 2 * align256(rows * p.splits * sizeof(float)) +
                      (p.splits > 1 ? align256(rows * p.splits * head_dim * sizeof(float)) : 0);
  return p;
}

void decode_attention(const DecodeAttnArgs& a, const DecodeAttnPlan& plan, void* workspace, Stream stream) {
  if (a.batch <= 0) return;
  if (plan.splits < 1 || plan.chunk < 1 || plan.chunk * plan.splits < a.max_len ||
      plan.chunk * (plan.splits - 1) >= a.max_len)
    throw Error("decode_attention kernel: the plan does not cover the cache length");
  if (!workspace) throw Error("decode_attention kernel: null workspace");
  const Layout l = layout(a.heads_q, a.heads_kv);
  const Work w = carve(workspace, a, plan.splits);
  const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(a.heads_kv * l.groups),
                  static_cast<unsigned>(a.batch));
  const std::size_t red_bytes = static_cast<std::size_t>(kWarps) * l.group_size * a.head_dim * sizeof(float);
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    check_args<T>(a);
    if (red_bytes > 48 * 1024) throw Error(cat("decode_attention kernel: head_dim ", a.head_dim, " is too large"));
    scores_kernel<T, kVec><<<grid, kThreads, 0, stream>>>(a, plan.chunk, l.groups, l.group_size, w, plan.splits);
    check_launch("decode_attention scores kernel");
    pv_kernel<T, kVec><<<grid, kThreads, red_bytes, stream>>>(a, plan.chunk, l.groups, l.group_size, w, plan.splits);
    check_launch("decode_attention pv kernel");
    if (plan.splits > 1) {
      combine_kernel<T><<<dim3(a.heads_q, a.batch), std::min(a.head_dim, 1024), 0, stream>>>(a, w, plan.splits);
      check_launch("decode_attention combine kernel");
    }
  });
}

int sm_count() {
  constexpr int kMaxDevices = 64;
  static int cached[kMaxDevices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) throw Error("sm_count: no CUDA device");
  if (dev < kMaxDevices && cached[dev] > 0) return cached[dev];
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    throw Error("sm_count: cudaDeviceGetAttribute failed");
  if (dev < kMaxDevices) cached[dev] = n;
  return n;
}

}  // namespace llmbench::cuda
