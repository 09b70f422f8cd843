// Session 31 prototype (not in the tree): a tensor-core GEMV fed by bulk copies of >= 1 KiB per row, the
// block's 8 warps sharing one ring of slots, against llmbench's simt and mma kernels (src/cuda/gemv.cu, linked
// in) on Qwen2.5-7B's decode matrices, W cycled past L2 as bench_gemv does. Outputs checked against the mma
// kernel. Build from the repository root: nvcc -std=c++17 -O3 -arch=sm_90 -Iinclude src/cuda/gemv.cu
// docs/gpu-runs/2026-12-04-session31/gemv_bulk2_proto.cu -o /tmp/gemv_bulk2 && /tmp/gemv_bulk2 (not run yet).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "llmbench/cuda/gemv.h"

namespace {

constexpr int kWarps = 8;
constexpr int kSlots = 3;

__device__ __forceinline__ unsigned su32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(std::uint64_t* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(su32(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(su32(b)) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(su32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* b, unsigned parity) {
  asm volatile("{\n.reg .pred done;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n" ::"r"(
                   su32(b)),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar, std::uint64_t pol) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(
          su32(dst)),
      "l"(src), "r"(bytes), "r"(su32(bar)), "l"(pol)
      : "memory");
}
__device__ __forceinline__ void mma16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
// 16 bytes of W as 8 / 4 packed bf16 pairs (int8: exact, via float).
template <bool kInt8>
__device__ __forceinline__ void pairs(const int4 raw, uint32_t* out) {
  const uint32_t w[4] = {static_cast<uint32_t>(raw.x), static_cast<uint32_t>(raw.y), static_cast<uint32_t>(raw.z),
                         static_cast<uint32_t>(raw.w)};
  if constexpr (kInt8) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t u = w[i] ^ 0x80808080u;
      float f[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) f[j] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u | j)) - 8388736.0f;
      out[2 * i] = pack_bf16(f[0], f[1]);
      out[2 * i + 1] = pack_bf16(f[2], f[3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = w[i];
  }
}

// Block = one 16-row tile, all of K. Slots of kRowBytes per row (kRowBytes / 64 steps), rows kPitch apart;
// warp w consumes steps [w · kWarpSteps, (w + 1) · kWarpSteps) of every slot. Thread 0 refills a slot once the
// 8 warps have arrived on its `empty` barrier. B ≤ 8 (one n-tile).
template <bool kInt8, int kRowBytes>
__global__ void __launch_bounds__(256) bulk2_kernel(const __nv_bfloat16* x, const void* w, const float* scale,
                                                    __nv_bfloat16* y, int batch, int n, int k) {
  constexpr int kE = kInt8 ? 16 : 8;                 // W elements per 16 bytes
  constexpr int kStepCols = 4 * kE;                  // columns per 64-byte step
  constexpr int kSlotSteps = kRowBytes / 64, kWarpSteps = kSlotSteps / kWarps;
  constexpr int kPitch = kRowBytes + 64, kSlotBytes = 16 * kPitch;
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ std::uint64_t full[kSlots], empty[kSlots];
  __shared__ float partial[kWarps][4][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * 16;
  const std::int64_t row_bytes = static_cast<std::int64_t>(k) * (kInt8 ? 1 : 2);
  const int nslots = static_cast<int>((row_bytes + kRowBytes - 1) / kRowBytes);
  std::uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  const unsigned char* wb = static_cast<const unsigned char*>(w);
  auto issue = [&](int i) {
    if (i >= nslots) return;
    const std::int64_t off = static_cast<std::int64_t>(i) * kRowBytes;
    const unsigned bytes = static_cast<unsigned>(min(static_cast<std::int64_t>(kRowBytes), row_bytes - off));
    std::uint64_t* bar = &full[i % kSlots];
    mbar_expect_tx(bar, 16 * bytes);
    unsigned char* slot = ring + (i % kSlots) * kSlotBytes;
    for (int r = 0; r < 16; ++r)
      bulk_copy(slot + r * kPitch, wb + min(row0 + r, static_cast<std::int64_t>(n) - 1) * row_bytes + off, bytes, bar, pol);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < kSlots; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], kWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int i = 0; i < kSlots; ++i) issue(i);
  }
  __syncthreads();
  const bool has_x = g < batch;
  const __nv_bfloat16* xr = x + (has_x ? g : 0) * static_cast<std::int64_t>(k) + t * kE;
  float c[4] = {0, 0, 0, 0};
  for (int i = 0; i < nslots; ++i) {
    const std::int64_t off = static_cast<std::int64_t>(i) * kRowBytes;
    const int steps = static_cast<int>(min(static_cast<std::int64_t>(kRowBytes), row_bytes - off) / 64);
    const int s0 = warp * kWarpSteps;
    const std::int64_t col0 = off / (kInt8 ? 1 : 2);  // first column of the slot
    const int4 zero = make_int4(0, 0, 0, 0);
    int4 xv[kWarpSteps][kE / 8];
#pragma unroll
    for (int u = 0; u < kWarpSteps; ++u)
#pragma unroll
      for (int j = 0; j < kE / 8; ++j)
        xv[u][j] = has_x && s0 + u < steps ? __ldg(reinterpret_cast<const int4*>(xr + col0 + (s0 + u) * kStepCols) + j) : zero;
    mbar_wait(&full[i % kSlots], static_cast<unsigned>((i / kSlots) & 1));
    const unsigned char* slot = ring + (i % kSlots) * kSlotBytes;
    int4 lo[kWarpSteps], hi[kWarpSteps];
#pragma unroll
    for (int u = 0; u < kWarpSteps; ++u) {
      const bool ok = s0 + u < steps;
      lo[u] = ok ? *reinterpret_cast<const int4*>(slot + g * kPitch + (s0 + u) * 64 + t * 16) : zero;
      hi[u] = ok ? *reinterpret_cast<const int4*>(slot + (g + 8) * kPitch + (s0 + u) * 64 + t * 16) : zero;
    }
#pragma unroll
    for (int u = 0; u < kWarpSteps; ++u) {
      if (s0 + u >= steps) break;
      uint32_t wl[kE / 2], wh[kE / 2];
      pairs<kInt8>(lo[u], wl);
      pairs<kInt8>(hi[u], wh);
      const uint32_t* xp = reinterpret_cast<const uint32_t*>(xv[u]);
#pragma unroll
      for (int j = 0; j < kE / 4; ++j) mma16816(c, wl[2 * j], wh[2 * j], wl[2 * j + 1], wh[2 * j + 1], xp[2 * j], xp[2 * j + 1]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[i % kSlots]);
    if (threadIdx.x == 0 && i + kSlots < nslots) {
      mbar_wait(&empty[i % kSlots], static_cast<unsigned>((i / kSlots) & 1));
      issue(i + kSlots);
    }
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) partial[warp][e][lane] = c[e];
  __syncthreads();
  if (warp >= 4) return;
  float v = 0;
  for (int w2 = 0; w2 < kWarps; ++w2) v += partial[w2][warp][lane];
  const std::int64_t row = row0 + g + (warp >= 2 ? 8 : 0);
  const int b = 2 * t + warp % 2;
  if (row < n && b < batch) y[static_cast<std::int64_t>(b) * n + row] = __float2bfloat16_rn(v * (scale ? scale[row] : 1.0f));
}

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__global__ void fill_bf16(__nv_bfloat16* p, std::int64_t n, float amp, unsigned seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16_rn(amp * ((h & 0xffff) / 32768.0f - 1.0f));
  }
}
__global__ void fill_i8(std::int8_t* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = static_cast<std::int8_t>(static_cast<int>(h % 255) - 127);
  }
}

}  // namespace

int main() {
  struct M {
    const char* name;
    int n, k;
  };
  const M mats[] = {{"qkv", 4608, 3584}, {"o", 3584, 3584}, {"gate_up", 37888, 3584}, {"down", 3584, 18944}};
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (bool int8 : {false, true}) {
    for (int batch : {1, 4}) {
      double layer[4] = {0, 0, 0, 0};
      for (const M& m : mats) {
        const std::int64_t wbytes = static_cast<std::int64_t>(m.n) * m.k * (int8 ? 1 : 2);
        const int copies = static_cast<int>((std::int64_t{400} << 20) / wbytes + 1);
        std::vector<void*> ws(copies);
        for (auto& p : ws) {
          CK(cudaMalloc(&p, wbytes));
          if (int8)
            fill_i8<<<1024, 256, 0, st>>>(static_cast<std::int8_t*>(p), wbytes, 7);
          else
            fill_bf16<<<1024, 256, 0, st>>>(static_cast<__nv_bfloat16*>(p), wbytes / 2, 0.05f, 7);
        }
        __nv_bfloat16 *x, *y_ref, *y;
        float* scale;
        CK(cudaMalloc(&x, 2 * static_cast<std::int64_t>(batch) * m.k));
        CK(cudaMalloc(&y_ref, 2 * static_cast<std::int64_t>(batch) * m.n));
        CK(cudaMalloc(&y, 2 * static_cast<std::int64_t>(batch) * m.n));
        CK(cudaMalloc(&scale, 4 * static_cast<std::int64_t>(m.n)));
        fill_bf16<<<256, 256, 0, st>>>(x, static_cast<std::int64_t>(batch) * m.k, 1.0f, 3);
        std::vector<float> ones(m.n, 0.01f);
        CK(cudaMemcpy(scale, ones.data(), 4 * m.n, cudaMemcpyHostToDevice));
        CK(cudaStreamSynchronize(st));
        int next = 0;
        auto run_llm = [&](llmbench::cuda::GemvKernel kernel, void* out) {
          llmbench::cuda::GemvArgs a;
          a.dtype = llmbench::cuda::DType::bf16;
          a.weight = int8 ? llmbench::cuda::WeightType::int8 : llmbench::cuda::WeightType::act;
          a.x = x;
          a.x_stride = m.k;
          a.w = ws[next++ % copies];
          a.scale = int8 ? scale : nullptr;
          a.y = out;
          a.y_stride = m.n;
          a.batch = batch;
          a.n = m.n;
          a.k = m.k;
          a.kernel = kernel;
          llmbench::cuda::gemv(a, st);
        };
        auto run_bulk = [&](auto row_bytes_tag) {
          constexpr int kRB = decltype(row_bytes_tag)::value;
          constexpr std::size_t smem = kSlots * 16 * (kRB + 64);
          auto kern = int8 ? bulk2_kernel<true, kRB> : bulk2_kernel<false, kRB>;
          static bool opted[2] = {false, false};  // per instantiation: once, outside any capture
          if (!opted[int8]) {
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
            opted[int8] = true;
          }
          kern<<<(m.n + 15) / 16, 256, smem, st>>>(x, ws[next++ % copies], int8 ? scale : nullptr, y, batch, m.n, m.k);
        };
        // 20 calls captured in one CUDA graph (launch costs out of the figure, as bench_gemv), replayed 5 times.
        auto time_us = [&](auto&& f) {
          for (int i = 0; i < 3; ++i) f();
          CK(cudaStreamSynchronize(st));
          cudaGraph_t graph;
          cudaGraphExec_t exec;
          CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
          for (int i = 0; i < 20; ++i) f();
          CK(cudaStreamEndCapture(st, &graph));
          CK(cudaGraphInstantiate(&exec, graph, 0));
          CK(cudaGraphLaunch(exec, st));
          CK(cudaEventRecord(e0, st));
          for (int i = 0; i < 5; ++i) CK(cudaGraphLaunch(exec, st));
          CK(cudaEventRecord(e1, st));
          CK(cudaEventSynchronize(e1));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          CK(cudaGraphExecDestroy(exec));
          CK(cudaGraphDestroy(graph));
          return 1e3 * ms / 100;
        };
        auto max_rel = [&]() {
          std::vector<__nv_bfloat16> a(static_cast<std::size_t>(batch) * m.n), b(a.size());
          CK(cudaMemcpy(a.data(), y, 2 * a.size(), cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(b.data(), y_ref, 2 * b.size(), cudaMemcpyDeviceToHost));
          double d = 0, mx = 1e-6;
          for (std::size_t i = 0; i < a.size(); ++i) {
            d = std::fmax(d, std::fabs(__bfloat162float(a[i]) - __bfloat162float(b[i])));
            mx = std::fmax(mx, std::fabs(__bfloat162float(b[i])));
          }
          return d / mx;
        };
        const double simt = time_us([&] { run_llm(llmbench::cuda::GemvKernel::simt, y_ref); });
        const double mma = time_us([&] { run_llm(llmbench::cuda::GemvKernel::mma, y_ref); });
        next = 0;
        run_llm(llmbench::cuda::GemvKernel::mma, y_ref);  // the reference on W copy 0
        next = 0;
        run_bulk(std::integral_constant<int, 1024>{});
        CK(cudaStreamSynchronize(st));
        const double err1 = max_rel();
        next = 0;
        run_bulk(std::integral_constant<int, 2048>{});
        CK(cudaStreamSynchronize(st));
        const double err2 = max_rel();
        const double b1 = time_us([&] { run_bulk(std::integral_constant<int, 1024>{}); });
        const double b2 = time_us([&] { run_bulk(std::integral_constant<int, 2048>{}); });
        CK(cudaGetLastError());
        layer[0] += simt, layer[1] += mma, layer[2] += b1, layer[3] += b2;
        std::printf("%-5s B=%d %-8s simt %7.2f  mma %7.2f  bulk1K %7.2f (%4.0f GB/s, err %.1e)  bulk2K %7.2f (%4.0f GB/s, err %.1e) us\n",
                    int8 ? "int8" : "bf16", batch, m.name, simt, mma, b1, wbytes / b1 / 1e3, err1, b2, wbytes / b2 / 1e3, err2);
        for (auto p : ws) CK(cudaFree(p));
        CK(cudaFree(x));
        CK(cudaFree(y));
        CK(cudaFree(y_ref));
        CK(cudaFree(scale));
      }
      std::printf("%-5s B=%d layer    simt %7.2f  mma %7.2f  bulk1K %7.2f  bulk2K %7.2f us\n", int8 ? "int8" : "bf16", batch,
                  layer[0], layer[1], layer[2], layer[3]);
    }
  }
  return 0;
}

namespace llmbench::cuda {
int sm_count() {
  int n = 0;
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0);
  return n;
}
}  // namespace llmbench::cuda
