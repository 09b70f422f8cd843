#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "common.cuh"
#include "decode_attention_mma.cuh"
#include "mma.cuh"

// Decode attention in one launch on tensor cores (sm_90): the same numbers as the three-launch kernel
// of decode_attention.cu (the eager formula up to float summation order: scores rounded to the dtype
// after Q·Kᵀ and after · scale, softmax in float with the row's global max and sum, probs rounded to the
// dtype, ·V accumulated in float), but
//   - Q·Kᵀ and P·V are m16n8k16 MMAs (float accumulators, exact 16-bit products) instead of float FMAs;
//   - the splits of one (row, kv head group) are one thread-block cluster: each block keeps its
//     scores in shared memory, the blocks exchange their (max, Σexp) and their partial P·V through
//     distributed shared memory, so there is no workspace, no second launch and no combine launch;
//   - tiles of 16 columns without a valid column read no K, and tiles whose probs are all 0 read no
//     V, so a cache longer than its rows costs little more than its valid columns.
//
// Layout (one warp, one tile of 16 columns c0 … c0 + 15, lane = 4 g + t):
//   Q·Kᵀ as Sᵀ[16 columns, 8 heads] = K[16, D] · Qᵀ[D, 8]: lane loads K[c0 + g] and K[c0 + 8 + g] at
//   d = 32 cc + 8 t … + 7 (16 bytes), and Q of head g at the same d, so the MMA's k index runs over d
//   in a permuted order (the same for K and Q: a dot product does not care). The accumulator gives
//   the lane the scores of columns c0 + g and c0 + 8 + g for heads 2t and 2t + 1.
//   P·V as Oᵀ[D, 8 heads] = Vᵀ[D, 16 columns] · Pᵀ[16, 8]: the lane's probs, packed in pairs and
//   transposed by movmatrix, are exactly the B operand; V[c0 + g] and V[c0 + 8 + g] at d = 32 cc + 8 t
//   … + 7, transposed 8 × 8 by movmatrix, are the A operand with rows d = 32 cc + 8 (g / 2) + 2 j +
//   g % 2 (j = 0 … 3 the 4-byte word of the load). The lane ends with O for heads 2t, 2t + 1 at those d.
namespace llmbench::cuda::detail {
namespace {
namespace cg = cooperative_groups;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 8;  // query heads per block in the MMA's n dimension (group_size ≤ kMaxGroup = 8)
static_assert(kRows == kMaxGroup, "one MMA n-tile holds a block's query heads");

std::size_t smem_bytes(std::int64_t chunk, int head_dim) {
  const std::size_t scores = static_cast<std::size_t>(chunk / kMmaTile) * 32 * sizeof(uint2);
  const std::size_t partial = static_cast<std::size_t>(kWarps) * kRows * head_dim * sizeof(float);
  return scores > partial ? scores : partial;
}

// Device code for sm_90 only (clusters); the sm_80 pass compiles an empty kernel that is never launched.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
template <class TKV>
constexpr bool kFp8 = std::is_same_v<TKV, __nv_fp8_e4m3>;
// Eight cache elements in one load: 16 bytes in the dtype, 8 in e4m3.
template <class TKV>
using Raw8 = std::conditional_t<kFp8<TKV>, uint2, uint4>;

// Eight cache elements as eight T in four packed pairs. e4m3 is dequantized with the head's scale and
// rounded to T, as KvCache's dequantized read gives the plain path.
template <class T, class TKV>
__device__ __forceinline__ uint4 to_packed(const Raw8<TKV>& raw, float scale) {
  if constexpr (kFp8<TKV>) {
    const auto* pairs = reinterpret_cast<const __nv_fp8x2_e4m3*>(&raw);
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = static_cast<float2>(pairs[j]);
      w[j] = pack2<T>(f.x * scale, f.y * scale);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    return raw;
  }
}

// The warp's 8 × 8 matrix of 16-bit elements (lane 4 r + c holds row r, columns 2c and 2c + 1),
// transposed in the same layout.
__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {
  uint32_t y;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// The rows of 16 columns c0 + g and c0 + 8 + g at d = 32 cc + 8 t … + 7 (x from ra, y from rb).
// kL2: through L2 only (ld.global.cg): a read that may run before the kernel that writes the cache has
// ended must not leave a line in L1 that a later read of the same address would hit.
template <bool kL2, class Raw, int NC>
__device__ __forceinline__ void load_rows(const Raw* ra, const Raw* rb, Raw (&x)[NC], Raw (&y)[NC]) {
#pragma unroll
  for (int cc = 0; cc < NC; ++cc) {  // + 32 cc elements
    x[cc] = kL2 ? __ldcg(ra + 4 * cc) : __ldg(ra + 4 * cc);
    y[cc] = kL2 ? __ldcg(rb + 4 * cc) : __ldg(rb + 4 * cc);
  }
}

// Cluster barrier halves. relaxed: no memory ordering (only "every block has started"); the plain pair
// makes each block's stores into the other blocks' shared memory visible to their reads after the wait.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// n (max, Σexp) pairs m[i · stride], l[i · stride] as one: the max first, then Σ l · exp(m − max), so the
// terms are independent (no chain of merges).
template <int kN>
__device__ __forceinline__ void merge_all(const float* m, const float* l, int n, int stride, float& mo, float& lo) {
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kN; ++i)
    if (i < n) mx = fmaxf(mx, m[i * stride]);
  float sum = 0.0f;
  if (mx != -INFINITY) {
#pragma unroll
    for (int i = 0; i < kN; ++i)
      if (i < n && m[i * stride] != -INFINITY) sum += l[i * stride] * expf(m[i * stride] - mx);
  }
  mo = mx;
  lo = sum;
}

#endif

// Grid (splits, Hkv · groups, B), clusters of `splits` blocks along x; NC = D / 32.
// kPush (for clusters of several blocks, where one block's chain of steps is the kernel's time): the
// warp's first tile of K and V is loaded at once, before waiting on the previous kernel when a.column
// names the column that kernel writes (read again after the wait); each block stores its (max, Σexp)
// and its slices of O into the blocks that merge them (no remote reads, two cluster barriers instead
// of three); (max, Σexp) pairs merge as max, then one sum. Without kPush (one block per row and kv
// head group: many blocks, each looping over its tiles): fewer registers, two resident blocks per SM.
// options: kBound (LLMBENCH_ATTN_BOUND, on unless 0; an A/B switch read at every launch): with a.column given,
// row b attends no column past a.column[b] (the caller's contract: none is valid), so a block reads no tile
// past it. The server's rows share one column bucket of its CUDA graphs but each stops at its own length.
// kEager (the loop kernel only; on unless LLMBENCH_ATTN_EAGER_LOADS=0, an A/B switch; default since session 37,
// when it took the kernel from 33.1 to 30.9 us at batch 64 x 1,024 on an H100): no read waits on what
// it reads for. A tile's K rows are loaded together with its valid flags (before, after them: flags, vote, then
// K), its V rows before its probs and their liveness vote (before, after them), and the warp's first V tile before
// the (max, Σexp) exchange between pass 1 and pass 2 (before, after it). The flags and probs still decide which
// MMAs run and which columns reach them (a column that is not live is zeroed after its load, as before), so the
// MMAs see the same operands in the same order: bit-identical. Reads of columns that turn out masked are extra
// bytes (none where the bound by the written column holds and the rows have no left padding: the server).
constexpr int kBound = 1, kEagerLoads = 2;
template <class T, class TKV, int NC, bool kPush, bool kEager = false>
__global__ void __launch_bounds__(kThreads, kPush || kEager ? 2 : 1) mma_kernel(DecodeAttnArgs a, std::int64_t chunk,
                                                                      int groups, int group_size, int options) {
  static_assert(!(kPush && kEager), "the push kernel loads its first tile eagerly already");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kPush) cluster_arrive_relaxed();  // waited for before the first store into another block
  const bool pre = kPush && a.column != nullptr;
  if (!pre) pdl_enter();
  constexpr int kD = NC * 32;
  constexpr unsigned kAll = 0xffffffffu;
  using Raw = Raw8<TKV>;
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(gridDim.x), split = static_cast<int>(blockIdx.x);  // = rank in the cluster
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int gsize = a.heads_q / a.heads_kv, kvh = blockIdx.y / groups, grp = blockIdx.y % groups;
  const int h0 = kvh * gsize + grp * group_size, ng = min(group_size, gsize - grp * group_size);
  const int b = blockIdx.z;
  const std::int64_t t0 = split * chunk;
  std::int64_t t1 = min(t0 + chunk, a.max_len);
  // `column` is written by no kernel before this one (the contract on DecodeAttnArgs::column): read before the wait.
  if ((options & kBound) != 0 && a.column != nullptr) t1 = min(t1, a.column[b * a.column_stride] + 1);
  const int ntiles = t1 > t0 ? static_cast<int>((t1 - t0 + kMmaTile - 1) / kMmaTile) : 0;
  const float lowest = Num<T>::lowest();

  extern __shared__ uint4 smem[];
  uint2* scores = reinterpret_cast<uint2*>(smem);  // [tiles, 32 lanes]: the lane's 4 scores in T
  float* partial = reinterpret_cast<float*>(smem);  // after the scores: [warps, kRows, D]
  __shared__ float warp_m[kWarps][kRows], warp_l[kWarps][kRows];
  __shared__ float block_m[kRows], block_l[kRows], row_m[kRows], row_l[kRows];
  // kPush: written by every block of the cluster: its (max, Σexp) at [rank], its part of this block's
  // slice of O at [rank · per] (splits · per ≤ kRows · kD + kMmaMaxSplits).
  __shared__ float recv_m[kPush ? kMmaMaxSplits : 1][kRows], recv_l[kPush ? kMmaMaxSplits : 1][kRows];
  __shared__ float recv_o[kPush ? kRows * kD + kMmaMaxSplits : 1];

  const std::int64_t kv_off = b * a.kv_stride_b + kvh * a.kv_stride_h + 8 * t;
  const TKV* kb = static_cast<const TKV*>(a.k) + kv_off;
  const TKV* vb = static_cast<const TKV*>(a.v) + kv_off;
  const std::uint8_t* valid = a.valid + b * a.valid_stride_b;

  // kPush: the warp's first tile (it = warp), K and V, in registers before anything else.
  Raw k0a[NC], k0b[NC], v0a[NC], v0b[NC];
  bool f_ok_a = false, f_ok_b = false, f_any = false;
  if (kPush && warp < ntiles) {
    const std::int64_t col = pre ? a.column[b * a.column_stride] : -1;
    const std::int64_t ca = t0 + warp * kMmaTile + g, cb = ca + 8;
    const bool in_a = ca < t1, in_b = cb < t1;
    f_ok_a = in_a && valid[ca] != 0;
    f_ok_b = in_b && valid[cb] != 0;
    f_any = __any_sync(kAll, f_ok_a || f_ok_b);
    if (f_any) {
      const std::int64_t la = in_a ? ca : t0, lb = in_b ? cb : t0;  // the columns the lane reads
      const Raw* ka = reinterpret_cast<const Raw*>(kb + la * a.kv_stride_t);
      const Raw* kc = reinterpret_cast<const Raw*>(kb + lb * a.kv_stride_t);
      const Raw* va = reinterpret_cast<const Raw*>(vb + la * a.kv_stride_t);
      const Raw* vc = reinterpret_cast<const Raw*>(vb + lb * a.kv_stride_t);
      if (pre) {
        load_rows<true>(ka, kc, k0a, k0b);
        load_rows<true>(va, vc, v0a, v0b);
        pdl_enter();
        // The written column again (load_rows fills both arrays from one row: the lane needs that row only).
        if (la == col) {
          load_rows<true>(ka, ka, k0a, k0a);
          load_rows<true>(va, va, v0a, v0a);
        }
        if (lb == col) {
          load_rows<true>(kc, kc, k0b, k0b);
          load_rows<true>(vc, vc, v0b, v0b);
        }
      } else {
        load_rows<false>(ka, kc, k0a, k0b);
        load_rows<false>(va, vc, v0a, v0b);
      }
    }
  }
  if (pre && !(warp < ntiles && f_any)) pdl_enter();

  // Q of head h0 + g (zero past the block's heads) at d = 32 cc + 8 t … + 7: the B operand of Q·Kᵀ.
  uint4 qf[NC];
  const T* qrow = static_cast<const T*>(a.q) + (static_cast<std::int64_t>(b) * a.heads_q + h0 + min(g, ng - 1)) * kD;
#pragma unroll
  for (int cc = 0; cc < NC; ++cc)
    qf[cc] = g < ng ? *reinterpret_cast<const uint4*>(qrow + 32 * cc + 8 * t) : make_uint4(0, 0, 0, 0);
  float k_scale = 1.0f, v_scale = 1.0f;
  if constexpr (kFp8<TKV>) {
    k_scale = a.k_scale[b * a.scale_stride_b + kvh];
    v_scale = a.v_scale[b * a.scale_stride_b + kvh];
  }

  // Pass 1: scores of the split's columns into shared memory, the (max, Σexp) of heads 2t, 2t + 1.
  float m0 = -INFINITY, l0 = 0.0f, m1 = -INFINITY, l1 = 0.0f;
  for (int it = warp; it < ntiles; it += kWarps) {
    const std::int64_t ca = t0 + it * kMmaTile + g, cb = ca + 8;
    const bool in_a = ca < t1, in_b = cb < t1;
    const bool first = kPush && it == warp;
    Raw ka[NC], kc[NC];  // all loads issued before any math
    if constexpr (kEager)  // before the flags, so that both are in flight at once
      load_rows<false>(reinterpret_cast<const Raw*>(kb + (in_a ? ca : t0) * a.kv_stride_t),
                       reinterpret_cast<const Raw*>(kb + (in_b ? cb : t0) * a.kv_stride_t), ka, kc);
    const bool ok_a = first ? f_ok_a : in_a && valid[ca] != 0;
    const bool ok_b = first ? f_ok_b : in_b && valid[cb] != 0;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (first ? f_any : __any_sync(kAll, ok_a || ok_b)) {
      if (first) {
#pragma unroll
        for (int cc = 0; cc < NC; ++cc) {
          ka[cc] = k0a[cc];
          kc[cc] = k0b[cc];
        }
      } else if constexpr (!kEager) {
        load_rows<false>(reinterpret_cast<const Raw*>(kb + (in_a ? ca : t0) * a.kv_stride_t),
                         reinterpret_cast<const Raw*>(kb + (in_b ? cb : t0) * a.kv_stride_t), ka, kc);
      }
#pragma unroll
      for (int cc = 0; cc < NC; ++cc) {
        const uint4 x = to_packed<T, TKV>(ka[cc], k_scale), y = to_packed<T, TKV>(kc[cc], k_scale);
        mma16816<T>(acc, x.x, y.x, x.y, y.y, qf[cc].x, qf[cc].y);
        mma16816<T>(acc, x.z, y.z, x.w, y.w, qf[cc].z, qf[cc].w);
      }
    }
    // acc: column ca heads 2t, 2t + 1, then column cb heads 2t, 2t + 1.
    float s[4];
    s[0] = ok_a ? round_f<T>(round_f<T>(acc[0]) * a.scale) : lowest;
    s[1] = ok_a ? round_f<T>(round_f<T>(acc[1]) * a.scale) : lowest;
    s[2] = ok_b ? round_f<T>(round_f<T>(acc[2]) * a.scale) : lowest;
    s[3] = ok_b ? round_f<T>(round_f<T>(acc[3]) * a.scale) : lowest;
    if (in_a) {
      push(m0, l0, s[0]);
      push(m1, l1, s[1]);
    }
    if (in_b) {
      push(m0, l0, s[2]);
      push(m1, l1, s[3]);
    }
    scores[it * 32 + lane] = make_uint2(pack2<T>(s[0], s[1]), pack2<T>(s[2], s[3]));  // exact: s is in T
  }

  // kEager: the warp's first V tile in flight during the exchange below (pass 2 reads it first).
  if constexpr (kEager) {
    if (warp < ntiles) {
      const std::int64_t ca = t0 + warp * kMmaTile + g, cb = ca + 8;
      load_rows<false>(reinterpret_cast<const Raw*>(vb + (ca < t1 ? ca : t0) * a.kv_stride_t),
                       reinterpret_cast<const Raw*>(vb + (cb < t1 ? cb : t0) * a.kv_stride_t), v0a, v0b);
    }
  }

  // (max, Σexp) per head: the warp's 8 column lanes, the block's warps, then the cluster's blocks.
  for (int off = 4; off < 32; off <<= 1) {
    merge(m0, l0, __shfl_xor_sync(kAll, m0, off), __shfl_xor_sync(kAll, l0, off));
    merge(m1, l1, __shfl_xor_sync(kAll, m1, off), __shfl_xor_sync(kAll, l1, off));
  }
  if (g == 0) {
    warp_m[warp][2 * t] = m0;
    warp_l[warp][2 * t] = l0;
    warp_m[warp][2 * t + 1] = m1;
    warp_l[warp][2 * t + 1] = l1;
  }
  __syncthreads();
  if constexpr (kPush) {
    cluster_wait();  // every block of the cluster has started: its shared memory may be written
    if (threadIdx.x < kRows) {
      float m, l;
      merge_all<kWarps>(&warp_m[0][threadIdx.x], &warp_l[0][threadIdx.x], kWarps, kRows, m, l);
      for (int r = 0; r < splits; ++r) {
        cluster.map_shared_rank(&recv_m[split][threadIdx.x], r)[0] = m;
        cluster.map_shared_rank(&recv_l[split][threadIdx.x], r)[0] = l;
      }
    }
    cluster_arrive();
    cluster_wait();
    if (threadIdx.x < kRows)
      merge_all<kMmaMaxSplits>(&recv_m[0][threadIdx.x], &recv_l[0][threadIdx.x], splits, kRows, row_m[threadIdx.x],
                               row_l[threadIdx.x]);
  } else {
    if (threadIdx.x < kRows) {
      float m = -INFINITY, l = 0.0f;
      for (int w = 0; w < kWarps; ++w) merge(m, l, warp_m[w][threadIdx.x], warp_l[w][threadIdx.x]);
      block_m[threadIdx.x] = m;
      block_l[threadIdx.x] = l;
    }
    cluster.sync();
    if (threadIdx.x < kRows) {
      float m = -INFINITY, l = 0.0f;
      for (int r = 0; r < splits; ++r)
        merge(m, l, cluster.map_shared_rank(block_m, r)[threadIdx.x], cluster.map_shared_rank(block_l, r)[threadIdx.x]);
      row_m[threadIdx.x] = m;
      row_l[threadIdx.x] = l;
    }
  }
  __syncthreads();

  // Pass 2: probs = dtype(exp(s − max) / Σexp), O += P·V.
  const float mx0 = row_m[2 * t], sum0 = row_l[2 * t], mx1 = row_m[2 * t + 1], sum1 = row_l[2 * t + 1];
  const bool head0 = 2 * t < ng, head1 = 2 * t + 1 < ng;
  float o[NC][2][4];
#pragma unroll
  for (int cc = 0; cc < NC; ++cc)
#pragma unroll
    for (int jp = 0; jp < 2; ++jp)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[cc][jp][e] = 0.0f;
  for (int it = warp; it < ntiles; it += kWarps) {
    const std::int64_t ca = t0 + it * kMmaTile + g, cb = ca + 8;
    const bool in_a = ca < t1, in_b = cb < t1;
    // kEager: the V rows in v0a, v0b (the first tile's loaded before the exchange; no second pair of arrays).
    Raw own_a[NC], own_c[NC];
    Raw(&va)[NC] = kEager ? v0a : own_a;
    Raw(&vc)[NC] = kEager ? v0b : own_c;
    if (kEager && it != warp)  // before the probs and their vote: the loads do not wait on them
      load_rows<false>(reinterpret_cast<const Raw*>(vb + (in_a ? ca : t0) * a.kv_stride_t),
                       reinterpret_cast<const Raw*>(vb + (in_b ? cb : t0) * a.kv_stride_t), va, vc);
    const uint2 sp = scores[it * 32 + lane];
    const float2 sa = unpack2<T>(sp.x), sb = unpack2<T>(sp.y);
    const float p0 = in_a && head0 ? round_f<T>(expf(sa.x - mx0) / sum0) : 0.0f;
    const float p1 = in_a && head1 ? round_f<T>(expf(sa.y - mx1) / sum1) : 0.0f;
    const float p2 = in_b && head0 ? round_f<T>(expf(sb.x - mx0) / sum0) : 0.0f;
    const float p3 = in_b && head1 ? round_f<T>(expf(sb.y - mx1) / sum1) : 0.0f;
    // A column weighs in when any head's prob is > 0; others must not reach O (unwritten V may be NaN).
    int live_a = p0 != 0.0f || p1 != 0.0f, live_b = p2 != 0.0f || p3 != 0.0f;
    live_a |= __shfl_xor_sync(kAll, live_a, 1);
    live_a |= __shfl_xor_sync(kAll, live_a, 2);
    live_b |= __shfl_xor_sync(kAll, live_b, 1);
    live_b |= __shfl_xor_sync(kAll, live_b, 2);
    if (!__any_sync(kAll, live_a || live_b)) continue;
    if constexpr (kEager) {
      // loaded above
    } else if (kPush && it == warp && f_any) {  // loaded with K, from the same columns
#pragma unroll
      for (int cc = 0; cc < NC; ++cc) {
        va[cc] = v0a[cc];
        vc[cc] = v0b[cc];
      }
    } else {
      load_rows<false>(reinterpret_cast<const Raw*>(vb + (in_a ? ca : t0) * a.kv_stride_t),
                       reinterpret_cast<const Raw*>(vb + (in_b ? cb : t0) * a.kv_stride_t), va, vc);
    }
    const uint32_t pb0 = transpose8x8(pack2<T>(p0, p1)), pb1 = transpose8x8(pack2<T>(p2, p3));
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int cc = 0; cc < NC; ++cc) {
      const uint4 x = live_a ? to_packed<T, TKV>(va[cc], v_scale) : zero;
      const uint4 y = live_b ? to_packed<T, TKV>(vc[cc], v_scale) : zero;
      mma16816<T>(o[cc][0], transpose8x8(x.x), transpose8x8(x.y), transpose8x8(y.x), transpose8x8(y.y), pb0, pb1);
      mma16816<T>(o[cc][1], transpose8x8(x.z), transpose8x8(x.w), transpose8x8(y.z), transpose8x8(y.w), pb0, pb1);
    }
  }

  // O: the warps' partials through shared memory (the scores are no longer read), in warp order.
  __syncthreads();
  float* mine = partial + warp * kRows * kD;
#pragma unroll
  for (int cc = 0; cc < NC; ++cc)
#pragma unroll
    for (int jp = 0; jp < 2; ++jp)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int d = 32 * cc + 8 * (g / 2) + 2 * (2 * jp + e) + g % 2;
        mine[(2 * t) * kD + d] = o[cc][jp][2 * e];
        mine[(2 * t + 1) * kD + d] = o[cc][jp][2 * e + 1];
      }
  __syncthreads();
  // The cluster's partials: block `split` sums its slice of the outputs over the blocks, in rank order.
  const int n_out = ng * kD, per = (n_out + splits - 1) / splits, end = min(n_out, (split + 1) * per);
  T* out = static_cast<T*>(a.out) + (static_cast<std::int64_t>(b) * a.heads_q + h0) * kD;
  if constexpr (kPush) {
    for (int i = threadIdx.x; i < n_out; i += kThreads) {
      float s = 0.0f;
      for (int w = 0; w < kWarps; ++w) s += partial[w * kRows * kD + i];
      const int owner = i / per;
      cluster.map_shared_rank(recv_o, owner)[split * per + (i - owner * per)] = s;
    }
    cluster_arrive();
    cluster_wait();
    for (int i = split * per + threadIdx.x; i < end; i += kThreads) {
      float s = 0.0f;
      for (int r = 0; r < splits; ++r) s += recv_o[r * per + (i - split * per)];
      out[i] = from_f<T>(s);
    }
  } else {
    for (int i = threadIdx.x; i < n_out; i += kThreads) {
      float s = 0.0f;
      for (int w = 0; w < kWarps; ++w) s += partial[w * kRows * kD + i];
      partial[i] = s;  // the block's partial in warp 0's slot (index i is this thread's alone)
    }
    cluster.sync();
    for (int i = split * per + threadIdx.x; i < end; i += kThreads) {
      float s = 0.0f;
      for (int r = 0; r < splits; ++r) s += cluster.map_shared_rank(partial, r)[i];
      out[i] = from_f<T>(s);
    }
    cluster.sync();  // the other blocks may still be reading this block's partial
  }
#endif
}

// The push kernel for clusters of several blocks of at most two tiles per warp, unless
// LLMBENCH_ATTN_PUSH=0 (an A/B switch, read at every launch). Longer chunks are a loop over tiles that
// the loop kernel streams faster (H200, session 14: batch 16 × 2048 columns 41.9 µs against 43.9 push).
bool use_push(int splits, std::int64_t chunk) {
  if (splits < 2 || chunk > 2 * kWarps * kMmaTile) return false;
  const char* v = std::getenv("LLMBENCH_ATTN_PUSH");
  return !(v && std::strcmp(v, "0") == 0);
}

// A 0/1 switch from the environment: unset or empty gives `fallback`. Read at every launch.
bool switch_on(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  if (std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  throw UsageError(cat(name, " must be 0 or 1, got '", v, "'"));
}

// The kernel's options: kBound unless LLMBENCH_ATTN_BOUND=0, kEagerLoads unless LLMBENCH_ATTN_EAGER_LOADS=0 (see
// mma_kernel).
int kernel_options() {
  return (switch_on("LLMBENCH_ATTN_BOUND", true) ? kBound : 0) |
         (switch_on("LLMBENCH_ATTN_EAGER_LOADS", true) ? kEagerLoads : 0);
}

template <class T, class TKV, int NC>
void launch(const DecodeAttnArgs& a, std::int64_t chunk, int splits, Stream stream) {
  const Layout l = layout(a.heads_q, a.heads_kv);
  const LaunchShape shape{dim3(static_cast<unsigned>(splits), static_cast<unsigned>(a.heads_kv * l.groups),
                               static_cast<unsigned>(a.batch)),
                          dim3(kThreads), smem_bytes(chunk, a.head_dim), static_cast<unsigned>(splits)};
  const int options = kernel_options();
  if (use_push(splits, chunk))
    launch_kernel("decode_attention mma kernel", mma_kernel<T, TKV, NC, true>, shape, stream, a, chunk, l.groups,
                  l.group_size, options);
  else if ((options & kEagerLoads) != 0)
    launch_kernel("decode_attention mma kernel", mma_kernel<T, TKV, NC, false, true>, shape, stream, a, chunk,
                  l.groups, l.group_size, options);
  else
    launch_kernel("decode_attention mma kernel", mma_kernel<T, TKV, NC, false>, shape, stream, a, chunk, l.groups,
                  l.group_size, options);
}

// Clusters of `splits` blocks of this instance that the device holds at once.
template <class T, int NC>
int max_clusters(std::int64_t chunk, int splits, int head_dim) {
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(splits);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(splits));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes(chunk, head_dim);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  const cudaError_t e = use_push(splits, chunk) ? cudaOccupancyMaxActiveClusters(&n, mma_kernel<T, T, NC, true>, &cfg)
                        : (kernel_options() & kEagerLoads) != 0
                            ? cudaOccupancyMaxActiveClusters(&n, mma_kernel<T, T, NC, false, true>, &cfg)
                            : cudaOccupancyMaxActiveClusters(&n, mma_kernel<T, T, NC, false>, &cfg);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: a failed query only means "unknown"
    return 0;
  }
  return n;
}

}  // namespace

int mma_max_active_clusters(DType dtype, int head_dim, std::int64_t chunk, int splits) {
  if (!mma_decode_attention_supported(dtype, head_dim) || splits < 1 || splits > kMmaMaxSplits) return 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  const bool push = use_push(splits, chunk), eager = !push && (kernel_options() & kEagerLoads) != 0;
  // The answer depends on the instance (dtype, D, push, eager) and its shared memory (chunk) only: asked once.
  using Key = std::tuple<int, int, int, bool, bool, std::size_t, int>;
  static std::mutex mutex;
  static std::map<Key, int> known;
  const Key key{device, static_cast<int>(dtype), head_dim, push, eager, smem_bytes(chunk, head_dim), splits};
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, float>) n = head_dim == 64 ? max_clusters<T, 2>(chunk, splits, head_dim)
                                                                : max_clusters<T, 4>(chunk, splits, head_dim);
  });
  known.emplace(key, n);
  return n;
}

bool mma_decode_attention_supported(DType dtype, int head_dim) {
  if (dtype == DType::f32 || (head_dim != 64 && head_dim != 128)) return false;
  return device_attribute<cudaDevAttrComputeCapabilityMajor>("decode_attention") >= 9;
}

void mma_decode_attention(const DecodeAttnArgs& a, std::int64_t chunk, int splits, Stream stream) {
  if (splits < 1 || splits > kMmaMaxSplits || chunk < 1 || chunk > kMmaMaxChunk || chunk % kMmaTile != 0 ||
      chunk * (splits - 1) >= a.max_len || chunk * splits < a.max_len)
    throw Error(cat("decode_attention mma kernel: plan of ", splits, " splits × ", chunk, " columns does not fit ",
                    a.max_len, " columns"));
  if (!mma_decode_attention_supported(a.dtype, a.head_dim))
    throw Error(cat("decode_attention mma kernel: needs bf16 or fp16, head_dim 64 or 128 and a GPU of compute "
                    "capability 9.0 or later (head_dim ",
                    a.head_dim, ")"));
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, float>) {
      auto with_kv = [&](auto kv_tag) {
        using TKV = typename decltype(kv_tag)::type;
        if (a.head_dim == 64)
          launch<T, TKV, 2>(a, chunk, splits, stream);
        else
          launch<T, TKV, 4>(a, chunk, splits, stream);
      };
      if (a.kv == KvType::fp8_e4m3)
        with_kv(Tag<__nv_fp8_e4m3>{});
      else
        with_kv(Tag<T>{});
    }
  });
}

}  // namespace llmbench::cuda::detail
