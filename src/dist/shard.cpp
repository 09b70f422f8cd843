#include "llmbench/dist/shard.h"

#include <torch/torch.h>

#include "llmbench/base/error.h"

namespace llmbench::dist {

void check_tp(const ModelConfig& c, int tp) {
  if (tp < 1) throw UsageError(cat("--tp must be >= 1, got ", tp));
  auto refuse = [&](const char* what, std::int64_t n) {
    throw UsageError(cat("--tp ", tp, " does not divide the model's ", n, " ", what,
                         ": each rank needs an equal share (tp must divide num_key_value_heads=", c.num_kv_heads,
                         ", num_attention_heads=", c.num_heads, " and intermediate_size=", c.intermediate_size, ")"));
  };
  if (c.num_kv_heads % tp) refuse("key/value heads", c.num_kv_heads);
  if (c.num_heads % tp) refuse("attention heads", c.num_heads);
  if (c.intermediate_size % tp) refuse("MLP columns (intermediate_size)", c.intermediate_size);
}

ModelConfig shard_config(const ModelConfig& c, int tp) {
  check_tp(c, tp);
  ModelConfig r = c;
  r.num_heads = c.num_heads / tp;
  r.num_kv_heads = c.num_kv_heads / tp;
  r.intermediate_size = c.intermediate_size / tp;
  return r;
}

Range shard_range(std::int64_t n, const Shard& s) {
  const std::int64_t len = n / s.world;
  return {s.rank * len, len};
}

torch::Tensor qkv_shard(const torch::Tensor& full, const ModelConfig& c, const Shard& s) {
  const std::int64_t q = c.q_size(), kv = c.kv_size();
  const Range rq = shard_range(q, s), rkv = shard_range(kv, s);
  return torch::cat({full.narrow(0, rq.start, rq.length), full.narrow(0, q + rkv.start, rkv.length),
                     full.narrow(0, q + kv + rkv.start, rkv.length)});
}

torch::Tensor gate_up_shard(const torch::Tensor& full, const Shard& s) {
  const std::int64_t i = full.size(0) / 2;
  const Range r = shard_range(i, s);
  return torch::cat({full.narrow(0, r.start, r.length), full.narrow(0, i + r.start, r.length)});
}

torch::Tensor column_shard(const torch::Tensor& full, const Shard& s) {
  const Range r = shard_range(full.size(1), s);
  return full.narrow(1, r.start, r.length).contiguous();
}

}  // namespace llmbench::dist
