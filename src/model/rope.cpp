#include "llmbench/model/rope.h"

#include <cmath>

namespace llmbench {

torch::Tensor rope_inv_freq(const RopeConfig& rope, std::int64_t head_dim) {
  // 1 / theta^(2i/D), the same float32 ops HF uses so tables match bit for bit.
  torch::Tensor exps = torch::arange(0, head_dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(head_dim);
  torch::Tensor inv = 1.0 / torch::pow(rope.theta, exps);  // [D/2]
  if (rope.type == RopeType::linear) return inv / rope.factor;
  if (rope.type != RopeType::llama3) return inv;
  const double old_len = static_cast<double>(rope.original_max_position_embeddings);
  const double low_wavelen = old_len / rope.low_freq_factor;
  const double high_wavelen = old_len / rope.high_freq_factor;
  torch::Tensor wavelen = 2 * M_PI / inv;
  torch::Tensor scaled = torch::where(wavelen > low_wavelen, inv / rope.factor, inv);
  torch::Tensor smooth = (old_len / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
  torch::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
  torch::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
  return torch::where(medium, smoothed, scaled);
}

Rope::Rope(const ModelConfig& c, std::int64_t max_len, torch::Dtype dtype, torch::Device device)
    : rope_(c.rope), head_dim_(c.head_dim), dtype_(dtype) {
  original_max_ = c.rope.original_max_position_embeddings > 0 ? c.rope.original_max_position_embeddings
                                                               : c.max_position_embeddings;
  torch::Tensor inv = rope_inv_freq(c.rope, c.head_dim);                                   // [D/2] f32
  torch::Tensor angles = torch::arange(max_len, torch::kInt64).to(torch::kFloat32).unsqueeze(1) * inv.unsqueeze(0);  // [T, D/2]
  torch::Tensor emb = torch::cat({angles, angles}, -1);                                     // [T, D]
  cos_ = emb.cos().to(device, dtype);
  sin_ = emb.sin().to(device, dtype);
}

std::pair<torch::Tensor, torch::Tensor> Rope::cos_sin(const torch::Tensor& positions) const {
  if (rope_.type == RopeType::dynamic) return dynamic_cos_sin(positions);
  const auto b = positions.size(0), s = positions.size(1);
  torch::Tensor flat = positions.reshape({-1});
  return {cos_.index_select(0, flat).view({b, 1, s, head_dim_}), sin_.index_select(0, flat).view({b, 1, s, head_dim_})};
}

// Dynamic NTK: theta grows with the current length max(positions) + 1 beyond original_max, computed on
// the device so decode stays sync-free.
std::pair<torch::Tensor, torch::Tensor> Rope::dynamic_cos_sin(const torch::Tensor& positions) const {
  const double dim = static_cast<double>(head_dim_);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(positions.device());
  torch::Tensor len = (positions.max() + 1).to(torch::kFloat32).clamp_min(static_cast<double>(original_max_));
  torch::Tensor base = rope_.theta * torch::pow(rope_.factor * len / static_cast<double>(original_max_) - (rope_.factor - 1),
                                                 dim / (dim - 2));                         // [] f32
  torch::Tensor exps = torch::arange(0, head_dim_, 2, f32) / dim;                          // [D/2]
  torch::Tensor inv = 1.0 / torch::pow(base, exps);                                        // [D/2]
  torch::Tensor angles = positions.to(torch::kFloat32).unsqueeze(-1) * inv;                 // [B, S, D/2]
  torch::Tensor emb = torch::cat({angles, angles}, -1).unsqueeze(1);                        // [B, 1, S, D]
  return {emb.cos().to(dtype_), emb.sin().to(dtype_)};
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto half = x.size(-1) / 2;
  torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);  // rotate_half
  return x * cos + rotated * sin;
}

}  // namespace llmbench
