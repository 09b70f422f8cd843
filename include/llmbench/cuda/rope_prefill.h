#pragma once
#include <cstdint>

#include "llmbench/cuda/kernels.h"

// Prefill RoPE (S ≥ 1), torch-free (src/cuda/rope_prefill.cu): splits the fused projection
// qkv [B, S, (Hq + 2 Hkv) D] into q [B, Hq, S, D], k [B, Hkv, S, D], v [B, Hkv, S, D] (contiguous, or at
// the given element strides with D contiguous: the KV cache's first S columns, q laid out [B, S, Hq, D]),
// rotating q and k at positions [B, S] with the tables cos/sin [T_rope, D]. The same
// roundings as the plain ops (x·cos and rotate_half(x)·sin each rounded to the dtype, then their sum):
// bit-identical to apply_rope on split, transposed views (of qkv + bias when a bias is given: the add
// rounded to the dtype as torch's). Positions are clamped into the table.
namespace llmbench::cuda {

// Element strides of a [B, H, S, D] output (D contiguous); all 0: contiguous.
struct HeadMajorStrides {
  std::int64_t b = 0, h = 0, s = 0;
};

struct RopePrefillArgs {
  DType dtype = DType::bf16;
  const void* qkv = nullptr;            // [B·S, N] rows qkv_stride elements apart, N = (Hq + 2 Hkv) D contiguous
  std::int64_t qkv_stride = 0;
  const void* bias = nullptr;           // [N] or null: added to qkv (the sum rounded to the dtype) before RoPE
  const void* cos = nullptr;            // [rope_len, D]
  const void* sin = nullptr;            // [rope_len, D]
  std::int64_t rope_len = 0;
  const std::int64_t* positions = nullptr;  // [B·S]
  void* q = nullptr;                    // [B, Hq, S, D]
  void* k = nullptr;                    // [B, Hkv, S, D]
  void* v = nullptr;                    // [B, Hkv, S, D]
  HeadMajorStrides q_strides, k_strides, v_strides;
  // Per-token K/V places (chunked prefill's packed tokens): when kv_row is set, token i = b·S + s writes
  // its k and v to row kv_row[i], column kv_col[i] of k / v (k_strides.b, .s step rows and columns), and
  // nowhere when that is outside [0, kv_rows) × [0, kv_cols); q keeps (b, s).
  const std::int64_t* kv_row = nullptr;
  const std::int64_t* kv_col = nullptr;
  std::int64_t kv_rows = 0, kv_cols = 0;
  std::int64_t batch = 0, seq = 0;
  int heads_q = 0, heads_kv = 0, head_dim = 0;
};
// Throws llmbench::Error on bad arguments or a failed launch. No allocation: capturable in a graph.
void rope_prefill(const RopePrefillArgs& args, Stream stream);

}  // namespace llmbench::cuda
