#include "llmbench/model/attention.h"

#include <torch/version.h>

#include <cmath>

#include "llmbench/base/error.h"

namespace llmbench {

AttnImpl parse_attn(const std::string& name) {
  if (name == "eager") return AttnImpl::eager;
  if (name == "sdpa") {
#if TORCH_VERSION_MAJOR >= 2
    return AttnImpl::sdpa;
#else
    throw UsageError(cat("--attn sdpa needs libtorch >= 2.0 (this build has ", TORCH_VERSION, "); use --attn eager"));
#endif
  }
  throw UsageError(cat("unknown attention '", name, "' (expected eager or sdpa)"));
}

const char* to_string(AttnImpl impl) { return impl == AttnImpl::eager ? "eager" : "sdpa"; }

torch::Tensor merge_groups(const torch::Tensor& out, std::int64_t hq, std::int64_t s) {
  // reshape, not view: sdpa's kernels may return a transposed layout ([B, G·S, Hkv, D] in memory).
  return out.reshape({out.size(0), hq, s, out.size(3)});
}

torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask) {
  const auto b = q.size(0), hq = q.size(1), s = q.size(2), d = q.size(3);
  const auto hkv = k.size(1), t = k.size(2), g = hq / hkv;
  torch::Tensor qg = q.reshape({b, hkv, g * s, d});  // [B, Hkv, G·S, D]; head h uses K/V head h / G
  const double lowest = q.scalar_type() == torch::kFloat32 ? std::numeric_limits<float>::lowest()
                        : q.scalar_type() == torch::kBFloat16
                            ? static_cast<double>(static_cast<float>(std::numeric_limits<c10::BFloat16>::lowest()))
                            : static_cast<double>(static_cast<float>(std::numeric_limits<c10::Half>::lowest()));
  torch::Tensor allowed = mask.unsqueeze(2);  // [B, 1, 1, S, T]
  if (impl == AttnImpl::eager) {
    torch::Tensor scores = torch::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
    scores = scores.view({b, hkv, g, s, t}).masked_fill(allowed.logical_not(), lowest);  // [B, Hkv, G, S, T]
    torch::Tensor probs = scores.softmax(-1, torch::kFloat32).to(q.scalar_type());
    return merge_groups(torch::matmul(probs.view({b, hkv, g * s, t}), v), hq, s);
  }
#if TORCH_VERSION_MAJOR >= 2
  torch::Tensor bias = torch::zeros(allowed.sizes(), q.options()).masked_fill(allowed.logical_not(), lowest);
  bias = bias.expand({b, 1, g, s, t}).reshape({b, 1, g * s, t});  // [B, 1, G·S, T]
  return merge_groups(at::scaled_dot_product_attention(qg, k, v, bias), hq, s);
#else
  throw UsageError("sdpa attention needs libtorch >= 2.0");
#endif
}

}  // namespace llmbench
