#pragma once
#include <cstdint>
#include <utility>

#include <torch/torch.h>

#include "llmbench/model/model_config.h"

// Rotary position embeddings as HF computes them: float32 angles position × inv_freq, cos/sin cast to
// the model dtype, rotate_half layout (the two halves of each head, not interleaved pairs).
namespace llmbench {

// inv_freq [D/2] float32 on the CPU for the default/linear/llama3 types (dynamic: the unscaled one).
torch::Tensor rope_inv_freq(const RopeConfig& rope, std::int64_t head_dim);

class Rope {
 public:
  Rope() = default;
  // Precomputes cos/sin tables for positions [0, max_len) on `device` (dynamic scaling computes per call).
  Rope(const ModelConfig& config, std::int64_t max_len, torch::Dtype dtype, torch::Device device);

  // positions [B, S] int64 on the device → {cos, sin}, each [B, 1, S, D] in the model dtype.
  // Gathers from the tables by device positions: no host sync, static shapes.
  std::pair<torch::Tensor, torch::Tensor> cos_sin(const torch::Tensor& positions) const;

  // The precomputed tables [T_max, D] (undefined for dynamic scaling, whose angles depend on the length).
  bool has_tables() const { return rope_.type != RopeType::dynamic && cos_.defined(); }
  const torch::Tensor& cos_table() const { return cos_; }
  const torch::Tensor& sin_table() const { return sin_; }

 private:
  std::pair<torch::Tensor, torch::Tensor> dynamic_cos_sin(const torch::Tensor& positions) const;

  RopeConfig rope_;
  std::int64_t head_dim_ = 0;
  std::int64_t original_max_ = 0;  // dynamic: the length beyond which theta grows
  torch::Dtype dtype_ = torch::kFloat32;
  torch::Tensor cos_;  // [T_max, D] model dtype
  torch::Tensor sin_;  // [T_max, D] model dtype
};

// x [B, H, S, D] rotated by cos/sin [B, 1, S, D].
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace llmbench
