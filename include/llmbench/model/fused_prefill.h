#pragma once
#include <torch/torch.h>

#include <cstdint>

// Prefill (S ≥ 1) counterpart of fused::rope_qkv_cache: one kernel instead of the split, transposes and
// the ~8 ops of apply_rope on q and k. On the CPU (or any tensor the kernels do not take) the plain ops,
// which give the same numbers.
namespace llmbench::fused {

struct PrefillQkv {
  torch::Tensor q;  // [B, Hq, S, D]
  torch::Tensor k;  // [B, Hkv, S, D]
  torch::Tensor v;  // [B, Hkv, S, D]
};

// qkv [B, S, (Hq + 2 Hkv) D], tables cos/sin [T_rope, D], positions [B, S] int64, bias [(Hq + 2 Hkv) D] or
// undefined (added to qkv first, as `qkv + bias`) → q and k rotated at their positions, v as is; all three
// contiguous on the kernel path.
PrefillQkv rope_split_qkv(const torch::Tensor& qkv, const torch::Tensor& cos_table, const torch::Tensor& sin_table,
                          const torch::Tensor& positions, std::int64_t heads_q, std::int64_t heads_kv,
                          const torch::Tensor& bias = {});

}  // namespace llmbench::fused
