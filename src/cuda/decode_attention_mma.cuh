#pragma once
// The decode-attention kernels' shared layout and the one-launch tensor-core kernel (sm_90), used by
// decode_attention.cu's dispatcher. See decode_attention_mma.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "llmbench/cuda/kernels.h"

namespace llmbench::cuda::detail {

constexpr int kMaxGroup = 8;  // query heads per block sharing one kv head

// How the query heads of one kv head are spread over blocks.
struct Layout {
  int group_size = 1;  // query heads per block
  int groups = 1;      // blocks per kv head
};

inline Layout layout(int heads_q, int heads_kv) {
  const int g = heads_q / heads_kv;
  Layout l;
  l.groups = (g + kMaxGroup - 1) / kMaxGroup;
  l.group_size = (g + l.groups - 1) / l.groups;
  return l;
}

// Running (max, Σexp): one more score.
__device__ __forceinline__ void push(float& m, float& l, float s) {
  if (s > m) {
    l = (m == -INFINITY ? 0.0f : l * expf(m - s)) + 1.0f;
    m = s;
  } else {
    l += expf(s - m);
  }
}

// Running (max, Σexp) pairs: (m, l) ∪ (m2, l2). -inf marks an empty pair.
__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;
  l = (m == -INFINITY ? 0.0f : l * expf(m - mm)) + (m2 == -INFINITY ? 0.0f : l2 * expf(m2 - mm));
  m = mm;
}

// The tensor-core kernel: the splits of one (row, kv head group) form one thread-block cluster, so it
// needs at most kMmaMaxSplits splits of at most kMmaMaxChunk columns each (its scores stay in shared
// memory), a 16-bit dtype, D ∈ {64, 128} and a GPU with clusters (compute capability 9.0+).
constexpr int kMmaMaxSplits = 8;
constexpr std::int64_t kMmaMaxChunk = 2048;
constexpr std::int64_t kMmaTile = 16;  // columns per tensor-core tile; chunks are multiples of it

// Whether this dtype / head size / current device can run it at all (the plan adds the size limits).
bool mma_decode_attention_supported(DType dtype, int head_dim);
// Thread-block clusters of `splits` blocks (the kernel instance for `chunk`) the current device holds at
// once (cudaOccupancyMaxActiveClusters, asked once per instance); 0 where unknown or not supported.
int mma_max_active_clusters(DType dtype, int head_dim, std::int64_t chunk, int splits);
// Device scratch: none (scores, partial sums and the split merge stay on chip).
void mma_decode_attention(const DecodeAttnArgs& a, std::int64_t chunk, int splits, Stream stream);

}  // namespace llmbench::cuda::detail
