#include "llmbench/runner/verify.h"

#include <algorithm>

#include "llmbench/base/error.h"

namespace llmbench {

double verification_tolerance(const std::string& dtype) {
  return parse_dtype(dtype) == torch::kFloat32 ? 0.01 : 0.10;
}

Verification verify_greedy(Model& model, const torch::Tensor& prompts, const torch::Tensor& generated,
                           double tolerance) {
  torch::NoGradGuard no_grad;
  const auto b = prompts.size(0), p = prompts.size(1), n = generated.size(1);
  if (generated.size(0) != b || n < 1) throw Error(cat("verify: generated ", generated.sizes(), " for prompts ", prompts.sizes()));
  const torch::Tensor fast_host = generated.to(torch::kCPU, torch::kInt64);                       // [B, N]
  torch::Tensor ids = torch::cat({prompts.to(torch::kCPU, torch::kInt64), fast_host.narrow(1, 0, n - 1)}, 1);  // [B, P + N − 1]
  const bool was_fused = model.fused_active(), was_gemv = model.gemv_enabled();
  model.set_fused(false);
  model.set_gemv(false);
  torch::Tensor h = model.forward_normed(ids).narrow(1, p - 1, n);           // [B, N, H] model dtype
  model.set_fused(was_fused);
  model.set_gemv(was_gemv);
  h = h.reshape({b * n, h.size(-1)});                                          // [B·N, H]
  const torch::Tensor w = model.lm_head().to(torch::kFloat32);                 // [V, H] float32
  const torch::Tensor fast = fast_host.reshape({b * n}).to(h.device());       // [B·N] int64

  // Rows per chunk: keeps the float32 logits of one chunk near 256 MiB.
  const std::int64_t rows = std::max<std::int64_t>(1, (std::int64_t{1} << 26) / w.size(0));
  std::vector<torch::Tensor> gaps, equal;
  for (std::int64_t r = 0; r < b * n; r += rows) {
    const std::int64_t c = std::min(rows, b * n - r);
    torch::Tensor logits = torch::nn::functional::linear(h.narrow(0, r, c).to(torch::kFloat32), w);  // [c, V]
    auto [top, arg] = logits.max(1);                                                                 // [c] each
    torch::Tensor low = std::get<0>(logits.min(1));                                                  // [c]
    torch::Tensor tok = logits.gather(1, fast.narrow(0, r, c).unsqueeze(1)).squeeze(1);              // [c]
    gaps.push_back(((top - tok) / (top - low).clamp_min(1e-30)).cpu());
    equal.push_back(arg.eq(fast.narrow(0, r, c)).cpu());
  }
  const torch::Tensor gap = torch::cat(gaps);  // [B·N] float32
  Verification v;
  v.reference = cat("plain prefill pass (", model.info().attn, " attention, no CUDA graph, no fused kernels, no GEMV), ",
                    model.info().dtype, model.info().quant == "bf16" ? "" : " + " + model.info().quant, " weights, float32 lm_head, teacher-forced");
  v.tokens = b * n;
  v.argmax_equal = torch::cat(equal).sum().item<std::int64_t>();
  v.worst_gap = gap.max().item<double>();
  v.tolerance = tolerance;
  v.over_tolerance = gap.gt(tolerance).sum().item<std::int64_t>();
  v.ok = v.over_tolerance == 0;
  return v;
}

}  // namespace llmbench
