// GPU host: is the 64-row decode attention's 2.8 TB/s (docs/performance.md, sessions 27–29: 26.9 µs per layer for
// 75.5 MB of K and V) what its grid shape allows, or its own work? Qwen2.5-7B's serving step: 64 rows, 4 kv heads,
// head dim 128, bf16, 576 valid columns in caches of 576 and 1,024 columns. Times, µs per call (20 calls in a CUDA
// graph, K/V cycled through 4 copies so that L2 holds none, median of 5 replays):
//   - llmbench's decode attention (linked from src/cuda/decode_attention*.cu; its own plan, the `column` bound on),
//     with LLMBENCH_ATTN_EAGER_LOADS=0 and =1 (the default since session 37), alternated twice;
//   - kernels that only read the same 576 columns of K and V of every (row, kv head) with 16-byte streaming loads
//     and no math, by shape: threads per block (128, 256), splits of the columns per (row, kv head) (1, 2, 4),
//     resident blocks per SM forced by shared memory (2, 4, 8), loads in flight per thread per array (1, 2, 4, 8),
//     K then V or K and V together;
//   - the kernel's own read order (warps over tiles of 16 columns, a lane's 8 loads per tile, the valid flags read
//     before each tile, K then V with a barrier) without its math, with 1, 2 or 4 tiles in flight and the flags
//     read per tile or first;
//   - one flat read of the same bytes (the copy rate of this board).
// Build and run from the repository root (CPU box or GPU host; nvcc only):
//   nvcc -std=c++17 -O3 -arch=sm_90 -Iinclude src/cuda/decode_attention.cu src/cuda/decode_attention_mma.cu \
//        scripts/bench/attn_read_bw.cu -o attn_read_bw && ./attn_read_bw
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llmbench/cuda/kernels.h"

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int kB = 64, kHkv = 4, kHq = 28, kD = 128, kValid = 576, kCopies = 4;
constexpr int kVecPerCol = kD * 2 / 16;  // 16-byte vectors per column of K (or V)

// Block = one split of one (row, kv head): columns [c0, c1) of its K and V, `unit_stride` vectors apart per unit.
// __launch_bounds__(256, 2) here and below: without it ptxas scheduled for 32 registers and so kept fewer loads in
// flight than the source issues (16 loads of 16 bytes need 64); with it, 78 registers for kU = 8 with K and V.
template <int kU, bool kTogether>
__global__ void __launch_bounds__(256, 2) read_kv(const int4* k, const int4* v, std::int64_t unit_stride, int cols, int splits, unsigned* out) {
  extern __shared__ int pad[];  // only there to bound the resident blocks per SM
  const int unit = static_cast<int>(blockIdx.x) / splits, split = static_cast<int>(blockIdx.x) % splits;
  const int per = (cols + splits - 1) / splits, c0 = split * per, c1 = min(cols, c0 + per);
  const std::int64_t n = static_cast<std::int64_t>(max(0, c1 - c0)) * kVecPerCol;
  const int4* kp = k + unit * unit_stride + static_cast<std::int64_t>(c0) * kVecPerCol;
  const int4* vp = v + unit * unit_stride + static_cast<std::int64_t>(c0) * kVecPerCol;
  unsigned acc = 0;
  auto fold = [&](const int4& x) { acc ^= static_cast<unsigned>(x.x ^ x.y ^ x.z ^ x.w); };
  if constexpr (kTogether) {
    for (std::int64_t i = threadIdx.x; i < n; i += static_cast<std::int64_t>(blockDim.x) * kU) {
      int4 a[kU], b[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {  // unconditional loads (past the end: the last vector again), all in flight
        const std::int64_t j = min(i + static_cast<std::int64_t>(u) * blockDim.x, n - 1);
        a[u] = __ldcs(kp + j);
        b[u] = __ldcs(vp + j);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) fold(a[u]), fold(b[u]);
    }
  } else {
    for (const int4* p : {kp, vp}) {
      for (std::int64_t i = threadIdx.x; i < n; i += static_cast<std::int64_t>(blockDim.x) * kU) {
        int4 a[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const std::int64_t j = min(i + static_cast<std::int64_t>(u) * blockDim.x, n - 1);
          a[u] = __ldcs(p + j);
        }
#pragma unroll
        for (int u = 0; u < kU; ++u) fold(a[u]);
      }
    }
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc + pad[0];  // practically never: keeps the loads
}

// The mma kernel's own order of reads, without its math: one block of 8 warps per (row, kv head), warp w taking
// tiles of 16 columns w, w + 8, …; lane 4 g + t reads columns 16 it + g and 16 it + 8 + g at d = 32 cc + 8 t (4 × 2
// loads of 16 bytes per tile); all K tiles, a block barrier, then all V tiles. Before a tile's loads the warp reads
// its two valid flags per lane and skips a tile with none (__any_sync), as the kernel does; kFlagsFirst reads the
// warp's flags for all its tiles at the start instead; kTiles tiles' loads are in flight together.
template <bool kFlagsFirst, int kTiles>
__global__ void __launch_bounds__(256, 2) chain_kv(const int4* k, const int4* v, const std::uint8_t* valid, int t_max,
                                                 std::int64_t unit_stride, int cols, unsigned* out) {
  extern __shared__ int pad[];
  constexpr int kMaxTiles = 8;  // per warp: 8 warps × 8 tiles × 16 columns ≥ 1,024
  const int unit = blockIdx.x, b = unit / kHkv, lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4,
            t = lane % 4;
  const std::uint8_t* vrow = valid + static_cast<std::int64_t>(b) * t_max;
  const int ntiles = (cols + 15) / 16;
  unsigned flags = 0;  // kFlagsFirst: bit i set when the warp's tile i has a valid column
  if constexpr (kFlagsFirst) {
#pragma unroll
    for (int i = 0; i < kMaxTiles; ++i) {
      const int it = warp + 8 * i, ca = 16 * it + g;
      const bool mine = it < ntiles && (vrow[min(ca, t_max - 1)] != 0 || vrow[min(ca + 8, t_max - 1)] != 0);
      if (__any_sync(0xffffffffu, mine)) flags |= 1u << i;
    }
  }
  unsigned acc = 0;
  for (const int4* base : {k + unit * unit_stride, v + unit * unit_stride}) {
    for (int i0 = 0; warp + 8 * i0 < ntiles; i0 += kTiles) {
      int4 xa[kTiles][4], xb[kTiles][4];
      bool live[kTiles];
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        const int i = i0 + j, it = warp + 8 * i, ca = 16 * it + g, cb = ca + 8;
        bool ok;
        if constexpr (kFlagsFirst) {
          ok = i < kMaxTiles && ((flags >> i) & 1u) != 0;
        } else {
          ok = it < ntiles && __any_sync(0xffffffffu, vrow[min(ca, t_max - 1)] != 0 || vrow[min(cb, t_max - 1)] != 0);
        }
        // Unconditional loads (a skipped or missing tile reads column 0 again: cached), so that the compiler keeps
        // all of them in flight; a skipped tile's values are dropped below, as the kernel never reads them.
        const std::int64_t la = ok ? ca : 0, lb = ok ? cb : 0;
        live[j] = ok;
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) {
          xa[j][cc] = __ldg(base + la * kVecPerCol + 4 * cc + t);
          xb[j][cc] = __ldg(base + lb * kVecPerCol + 4 * cc + t);
        }
      }
#pragma unroll
      for (int j = 0; j < kTiles; ++j)
#pragma unroll
        for (int cc = 0; cc < 4; ++cc)
          if (live[j])
            acc ^= static_cast<unsigned>(xa[j][cc].x ^ xa[j][cc].y ^ xa[j][cc].z ^ xa[j][cc].w ^ xb[j][cc].x ^
                                         xb[j][cc].y ^ xb[j][cc].z ^ xb[j][cc].w);
    }
    __syncthreads();  // the kernel's barrier between its K and V passes
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc + pad[0];
}

// The flat read: n vectors from p, grid-strided, 4 loads in flight per thread.
__global__ void read_flat(const int4* p, std::int64_t n, unsigned* out) {
  unsigned acc = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += 4 * stride) {
    int4 a[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) a[u] = i + u * stride < n ? __ldcs(p + i + u * stride) : make_int4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= static_cast<unsigned>(a[u].x ^ a[u].y ^ a[u].z ^ a[u].w);
  }
  if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;
}

__global__ void fill(__nv_bfloat16* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16_rn(((h & 0xffff) / 32768.0f - 1.0f));
  }
}

// µs per call of f(i) (i: the call's K/V copy), 20 calls in one CUDA graph, median of 5 replays.
template <class F>
double time_us(cudaStream_t st, F&& f) {
  for (int i = 0; i < 3; ++i) f(i);
  CK(cudaStreamSynchronize(st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 20; ++i) f(i);
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(1e3 * ms / 20);
  }
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[2];
}

struct Row {
  int threads, splits, per_sm, loads, together;
  double us;
};

}  // namespace

int main() {
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  int sms = 0, smem_sm = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  const double bytes = 2.0 * kB * kHkv * kValid * kD * 2;  // K and V of the valid columns
  std::printf("%d SMs; K and V of %d rows x %d kv heads x %d columns x %d: %.1f MB per call\n", sms, kB, kHkv, kValid, kD,
              bytes / 1e6);
  unsigned* out;
  CK(cudaMalloc(&out, 1 << 20));

  for (int t_max : {kValid, 1024}) {
    const std::int64_t elems = static_cast<std::int64_t>(kB) * kHkv * t_max * kD;  // one of K, V
    std::vector<__nv_bfloat16*> k(kCopies), v(kCopies);
    for (int c = 0; c < kCopies; ++c) {
      CK(cudaMalloc(&k[c], 2 * elems));
      CK(cudaMalloc(&v[c], 2 * elems));
      fill<<<1024, 256, 0, st>>>(k[c], elems, 11 + c);
      fill<<<1024, 256, 0, st>>>(v[c], elems, 23 + c);
    }
    __nv_bfloat16 *q, *o;
    CK(cudaMalloc(&q, 2 * kB * kHq * kD));
    CK(cudaMalloc(&o, 2 * kB * kHq * kD));
    fill<<<64, 256, 0, st>>>(q, static_cast<std::int64_t>(kB) * kHq * kD, 5);
    std::vector<std::uint8_t> valid_h(static_cast<std::size_t>(kB) * t_max, 0);
    for (int b = 0; b < kB; ++b)
      for (int c = 0; c < kValid; ++c) valid_h[static_cast<std::size_t>(b) * t_max + c] = 1;
    std::uint8_t* valid;
    CK(cudaMalloc(&valid, valid_h.size()));
    CK(cudaMemcpy(valid, valid_h.data(), valid_h.size(), cudaMemcpyHostToDevice));
    std::vector<std::int64_t> col_h(kB, kValid - 1);
    std::int64_t* column;
    CK(cudaMalloc(&column, 8 * kB));
    CK(cudaMemcpy(column, col_h.data(), 8 * kB, cudaMemcpyHostToDevice));
    CK(cudaStreamSynchronize(st));

    // llmbench's kernel, as the decode step runs it.
    const llmbench::cuda::DecodeAttnPlan plan =
        llmbench::cuda::plan_decode_attention(llmbench::cuda::DType::bf16, kB, kHq, kHkv, kD, t_max, sms);
    void* ws = nullptr;
    if (plan.workspace_bytes > 0) CK(cudaMalloc(&ws, plan.workspace_bytes));
    llmbench::cuda::DecodeAttnArgs a;
    a.dtype = llmbench::cuda::DType::bf16;
    a.q = q;
    a.kv_stride_b = static_cast<std::int64_t>(kHkv) * t_max * kD;
    a.kv_stride_h = static_cast<std::int64_t>(t_max) * kD;
    a.kv_stride_t = kD;
    a.valid = valid;
    a.valid_stride_b = t_max;
    a.column = column;
    a.column_stride = 1;
    a.out = o;
    a.max_len = t_max;
    a.batch = kB;
    a.heads_q = kHq;
    a.heads_kv = kHkv;
    a.head_dim = kD;
    a.scale = 1.0f / std::sqrt(static_cast<float>(kD));
    // LLMBENCH_ATTN_EAGER_LOADS=0, then 1 (the default since session 37: the loop kernel's reads not waiting on flags
    // or probs; read when the graph is captured), alternated twice.
    for (int round = 0; round < 4; ++round) {
      const bool eager = round % 2 == 1;
      setenv("LLMBENCH_ATTN_EAGER_LOADS", eager ? "1" : "0", 1);
      const double llm = time_us(st, [&](int i) {
        a.k = k[i % kCopies];
        a.v = v[i % kCopies];
        llmbench::cuda::decode_attention(a, plan, ws, st);
      });
      std::printf("%sT_max %d: llmbench decode attention (%s, %d split(s) of %lld columns)%s: %.2f us, %.0f GB/s\n",
                  round == 0 ? "\n" : "", t_max, plan.kernel == llmbench::cuda::DecodeAttnKernel::mma ? "mma" : "split",
                  plan.splits, static_cast<long long>(plan.chunk), eager ? ", eager loads" : "", llm, bytes / llm / 1e3);
    }
    unsetenv("LLMBENCH_ATTN_EAGER_LOADS");

    // The reads alone, by shape.
    std::vector<Row> rows;
    const std::int64_t unit_stride = static_cast<std::int64_t>(t_max) * kVecPerCol;
    auto run = [&](auto kernel, int threads, int splits, int per_sm, int loads, int together) {
      const int smem = smem_sm / per_sm - 2048;  // a little below each block's share (per-block reserve)
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int resident = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, smem));
      const unsigned blocks = static_cast<unsigned>(kB * kHkv * splits);
      const double us = time_us(st, [&](int i) {
        kernel<<<blocks, threads, smem, st>>>(reinterpret_cast<const int4*>(k[i % kCopies]),
                                              reinterpret_cast<const int4*>(v[i % kCopies]), unit_stride, kValid, splits, out);
      });
      CK(cudaGetLastError());
      rows.push_back({threads, splits, resident, loads, together, us});
    };
    for (int threads : {128, 256})
      for (int splits : {1, 2, 4})
        for (int per_sm : {2, 4, 8}) {
          run(read_kv<1, false>, threads, splits, per_sm, 1, 0);
          run(read_kv<2, false>, threads, splits, per_sm, 2, 0);
          run(read_kv<4, false>, threads, splits, per_sm, 4, 0);
          run(read_kv<8, false>, threads, splits, per_sm, 8, 0);
          run(read_kv<1, true>, threads, splits, per_sm, 1, 1);
          run(read_kv<2, true>, threads, splits, per_sm, 2, 1);
          run(read_kv<4, true>, threads, splits, per_sm, 4, 1);
          run(read_kv<8, true>, threads, splits, per_sm, 8, 1);
        }
    std::printf("threads splits blocks/SM loads K,V-together      us    GB/s\n");
    for (const Row& r : rows)
      std::printf("%7d %6d %9d %5d %14d %8.2f %7.0f\n", r.threads, r.splits, r.per_sm, r.loads, r.together, r.us,
                  bytes / r.us / 1e3);
    // The kernel's read order and flag dependencies, no math (two resident blocks per SM, as the kernel).
    auto chain = [&](auto kernel, const char* what) {
      const int smem = smem_sm / 2 - 2048;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      const double us = time_us(st, [&](int i) {
        kernel<<<kB * kHkv, 256, smem, st>>>(reinterpret_cast<const int4*>(k[i % kCopies]),
                                             reinterpret_cast<const int4*>(v[i % kCopies]), valid, t_max, unit_stride,
                                             kValid, out);
      });
      CK(cudaGetLastError());
      std::printf("kernel's read order, %-40s %8.2f us %7.0f GB/s\n", what, us, bytes / us / 1e3);
    };
    chain(chain_kv<false, 1>, "flags per tile, 1 tile in flight:");
    chain(chain_kv<false, 2>, "flags per tile, 2 tiles in flight:");
    chain(chain_kv<true, 1>, "flags first, 1 tile in flight:");
    chain(chain_kv<true, 2>, "flags first, 2 tiles in flight:");
    chain(chain_kv<true, 4>, "flags first, 4 tiles in flight:");
    const Row* best = &*std::min_element(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.us < y.us; });
    std::printf("fastest read: %d threads, %d split(s), %d blocks/SM, %d loads, together %d: %.2f us, %.0f GB/s\n",
                best->threads, best->splits, best->per_sm, best->loads, best->together, best->us, bytes / best->us / 1e3);

    for (int c = 0; c < kCopies; ++c) {
      CK(cudaFree(k[c]));
      CK(cudaFree(v[c]));
    }
    CK(cudaFree(q));
    CK(cudaFree(o));
    CK(cudaFree(valid));
    CK(cudaFree(column));
    if (ws) CK(cudaFree(ws));
  }

  // The copy rate of this board: the same bytes read flat, copies cycled.
  const std::int64_t n = static_cast<std::int64_t>(bytes / 16);
  std::vector<int4*> flat(kCopies);
  for (auto& p : flat) {
    CK(cudaMalloc(&p, 16 * n));
    CK(cudaMemset(p, 1, 16 * n));
  }
  const double us = time_us(st, [&](int i) { read_flat<<<sms * 8, 256, 0, st>>>(flat[i % kCopies], n, out); });
  CK(cudaGetLastError());
  std::printf("\nflat read of the same %.1f MB: %.2f us, %.0f GB/s\n", bytes / 1e6, us, bytes / us / 1e3);
  for (auto p : flat) CK(cudaFree(p));
  return 0;
}
