#pragma once
#include <cstdint>

#include <torch/types.h>

#include "llmbench/model/model_config.h"

// Megatron-style split of a Llama/Qwen2 decoder over `world` ranks. Column-parallel (output rows split):
// qkv (each rank: its q heads, its k heads, its v heads, and the same rows of the qkv bias) and gate_up
// (its gate rows, its up rows). Row-parallel (input columns split, outputs summed by one all-reduce):
// o and down. Replicated: embedding, norms, final norm, lm_head.
namespace llmbench::dist {

struct Shard {
  int rank = 0;
  int world = 1;
  bool split() const { return world > 1; }
};

// Throws UsageError with the reason when `tp` does not divide the KV heads, the query heads or the
// intermediate size (each rank needs whole heads and an equal slice of the MLP).
void check_tp(const ModelConfig& config, int tp);

// The config one rank runs: num_heads, num_kv_heads and intermediate_size divided by `tp` (check_tp first).
ModelConfig shard_config(const ModelConfig& config, int tp);

// [start, start + length) of this rank's slice of `n` (n divisible by world).
struct Range {
  std::int64_t start = 0;
  std::int64_t length = 0;
};
Range shard_range(std::int64_t n, const Shard& shard);

// full [(Hq + 2 Hkv) D, ...] (weight or bias) → this rank's [(Hq + 2 Hkv) D / world, ...]: q rows, k rows, v rows.
torch::Tensor qkv_shard(const torch::Tensor& full, const ModelConfig& config, const Shard& shard);
// full [2 I, H] → [2 I / world, H]: this rank's gate rows, then its up rows.
torch::Tensor gate_up_shard(const torch::Tensor& full, const Shard& shard);
// full [H, K] → [H, K / world]: this rank's input columns (o: K = Hq D, down: K = I).
torch::Tensor column_shard(const torch::Tensor& full, const Shard& shard);

}  // namespace llmbench::dist
