// GPU host: HBM read bandwidth of 1D bulk copies (cp.async.bulk into shared memory, counted by an mbarrier) by
// copy size, slots in flight, warps per block and blocks per SM, against plain 16-byte loads. Each warp streams
// its own chunks (chunk c = warp id + i · all warps) through a ring of `slots` chunks in shared memory; lane 0
// issues, every lane reads one word per chunk. Answers how large each copy of a GEMV fed by bulk copies must be
// (docs/performance.md, session 31: ≥ 1 KiB per copy for the full rate; 256 B reach 1.8 TB/s).
// Build and run (no torch, no CMake): nvcc -std=c++17 -O3 -arch=sm_90 scripts/bench/bulk_copy_bw.cu -o /tmp/bulk_copy_bw && /tmp/bulk_copy_bw
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ unsigned su32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__global__ void bulk_read(const char* src, size_t bytes, int chunk, int slots, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t bars[32][8];
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t gw = static_cast<size_t>(blockIdx.x) * warps + warp, nw = static_cast<size_t>(gridDim.x) * warps;
  const size_t nchunks = bytes / chunk;
  const size_t mine = gw < nchunks ? (nchunks - gw + nw - 1) / nw : 0;
  unsigned char* ring = smem + static_cast<size_t>(warp) * slots * chunk;
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  auto issue = [&](size_t i) {
    if (i >= mine) return;
    uint64_t* bar = &bars[warp][i % slots];
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(su32(bar)), "r"(chunk) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n"
                 ::"r"(su32(ring + (i % slots) * chunk)), "l"(src + (gw + i * nw) * chunk), "r"(chunk), "r"(su32(bar)), "l"(policy)
                 : "memory");
  };
  if (lane == 0) {
    for (int i = 0; i < slots; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(su32(&bars[warp][i])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int i = 0; i < slots; ++i) issue(i);
  }
  __syncwarp();
  unsigned acc = 0;
  for (size_t i = 0; i < mine; ++i) {
    const unsigned parity = static_cast<unsigned>((i / slots) & 1);
    asm volatile("{\n.reg .pred done;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n"
                 ::"r"(su32(&bars[warp][i % slots])), "r"(parity) : "memory");
    acc ^= reinterpret_cast<const unsigned*>(ring + (i % slots) * chunk)[lane % (chunk / 4)];
    __syncwarp();
    if (lane == 0) issue(i + slots);
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

__global__ void plain_read(const int4* src, size_t n, unsigned* sink) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    int4 a = __ldcs(src + i), b = __ldcs(src + i + stride), c = __ldcs(src + i + 2 * stride), d = __ldcs(src + i + 3 * stride);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n; i += stride) acc ^= __ldcs(src + i).x;
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

int main() {
  const size_t bytes = size_t{2} << 30;
  char* src; unsigned* sink;
  CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(src, 1, bytes));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaFuncSetAttribute(bulk_read, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto time_ms = [&](auto launch) { launch(); cudaEventRecord(a); for (int r = 0; r < 5; ++r) launch(); cudaEventRecord(b);
                                    cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); return ms / 5; };
  // plain loads: 256 threads, blocks per SM 4 and 8
  for (int per_sm : {4, 8}) {
    float ms = time_ms([&] { plain_read<<<sms * per_sm, 256>>>(reinterpret_cast<const int4*>(src), bytes / 16, sink); });
    printf("plain 16-byte loads, %d blocks of 256 per SM: %.0f GB/s\n", per_sm, bytes / ms / 1e6);
  }
  CK(cudaGetLastError());
  printf("bulk: chunk bytes, slots per warp, warps per block, blocks per SM -> GB/s (in flight per SM)\n");
  for (int chunk : {256, 512, 1024, 2048, 4096, 8192, 16384}) {
    for (int warps : {4, 8}) {
      for (int slots : {2, 4}) {
        const size_t smem = static_cast<size_t>(warps) * slots * chunk;
        if (smem > 200 * 1024) continue;
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bulk_read, warps * 32, smem));
        if (per_sm < 1) continue;
        float ms = time_ms([&] { bulk_read<<<sms * per_sm, warps * 32, smem>>>(src, bytes, chunk, slots, sink); });
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) { printf("chunk %d: %s\n", chunk, cudaGetErrorString(e)); return 1; }
        printf("bulk %6d B x %d slots x %d warps x %d blocks/SM -> %5.0f GB/s (%4zu KiB in flight per SM)\n", chunk, slots,
               warps, per_sm, bytes / ms / 1e6, smem * per_sm / 1024);
      }
    }
  }
  return 0;
}
