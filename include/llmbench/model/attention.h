#pragma once
#include <string>

#include <torch/torch.h>

// Attention over grouped K/V heads (GQA) without materialising repeated K/V: the G query heads that
// share a K/V head are folded into the row dimension of one batched GEMM.
namespace llmbench {

enum class AttnImpl { eager, sdpa };

// "eager" | "sdpa"; sdpa throws UsageError on libtorch < 2.0.
AttnImpl parse_attn(const std::string& name);
const char* to_string(AttnImpl impl);

// [B, Hkv, G·S, D] with any strides → [B, Hq, S, D]: the G query heads of a K/V head unfolded again.
torch::Tensor merge_groups(const torch::Tensor& out, std::int64_t hq, std::int64_t s);

// q [B, Hq, S, D], k/v [B, Hkv, T, D], mask bool [B, 1, S, T] (true: may attend) → [B, Hq, S, D].
// eager: (Q·Kᵀ)·1/√D, masked to the dtype's lowest value (a fully masked row stays finite, as in HF),
// softmax in float32, ·V. sdpa: torch's scaled_dot_product_attention with the same additive mask.
torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask);

}  // namespace llmbench
