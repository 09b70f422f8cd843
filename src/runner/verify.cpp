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
  const bool was_fused = model.fused_active(), was_gemv = model.gemv_enabled();
  const torch::Tensor fast = fast_host.to(model.device());                     // [B, N] int64
  std::vector<torch::Tensor> gaps, equal;
  std::int64_t nonfinite = 0;  // reference rows with a NaN or infinite logit: no gap can be measured there
  // logits [c, V] float32 of the reference against the fast path's tokens [c]: each token's gap below the
  // reference's best, as a fraction of that row's logit range.
  auto add = [&](const torch::Tensor& logits, const torch::Tensor& tokens) {
    nonfinite += torch::isfinite(logits).all(1).logical_not().sum().item<std::int64_t>();
    auto [top, arg] = logits.max(1);                                                                 // [c] each
    torch::Tensor low = std::get<0>(logits.min(1));                                                  // [c]
    torch::Tensor tok = logits.gather(1, tokens.unsqueeze(1)).squeeze(1);                            // [c]
    gaps.push_back(((top - tok) / (top - low).clamp_min(1e-30)).cpu());
    equal.push_back(arg.eq(tokens).cpu());
  };
  model.set_fused(false);
  model.set_gemv(false);
  std::string reference;
  if (model.cache().fp8()) {
    // A prefill pass never reads the KV cache: against it, an fp8 cache would be judged on its own
    // quantization (a quality figure, reported apart) rather than on the fast path. The reference is the
    // plain path through the same fp8 cache: the prompts' prefill, then one plain decode step per token.
    model.reset_cache();
    torch::Tensor logits = model.prefill(prompts.to(torch::kCPU, torch::kInt64));               // [B, V] float32
    for (std::int64_t i = 0; i < n; ++i) {
      if (i > 0) logits = model.decode_step(fast.select(1, i - 1));                               // [B, V]
      add(logits, fast.select(1, i));
    }
    reference = cat("plain decode path through the fp8 KV cache (", model.info().attn,
                    " attention, no CUDA graph, no fused kernels, no GEMV), ", model.info().dtype,
                    model.info().quant == "bf16" ? "" : " + " + model.info().quant, " weights, teacher-forced");
  } else {
    torch::Tensor ids = torch::cat({prompts.to(torch::kCPU, torch::kInt64), fast_host.narrow(1, 0, n - 1)}, 1);  // [B, P + N − 1]
    torch::Tensor h = model.forward_normed(ids).narrow(1, p - 1, n);           // [B, N, H] model dtype
    h = h.reshape({b * n, h.size(-1)});                                          // [B·N, H]
    const torch::Tensor w = model.lm_head_float32();                             // [V, H] float32
    const torch::Tensor flat = fast.reshape({b * n});                            // [B·N] int64
    // Rows per chunk: keeps the float32 logits of one chunk near 256 MiB.
    const std::int64_t rows = std::max<std::int64_t>(1, (std::int64_t{1} << 26) / w.size(0));
    for (std::int64_t r = 0; r < b * n; r += rows) {
      const std::int64_t c = std::min(rows, b * n - r);
      add(torch::nn::functional::linear(h.narrow(0, r, c).to(torch::kFloat32), w), flat.narrow(0, r, c));  // [c, V]
    }
    reference = cat("plain prefill pass (", model.info().attn, " attention, no CUDA graph, no fused kernels, no GEMV), ",
                    model.info().dtype, model.info().quant == "bf16" ? "" : " + " + model.info().quant,
                    " weights, float32 lm_head, teacher-forced");
  }
  model.set_fused(was_fused);
  model.set_gemv(was_gemv);
  // NaN compares false with everything: without this a model that computes NaN would pass as "ok".
  if (nonfinite > 0)
    throw Error(cat("verification: the reference path's logits are NaN or infinite at ", nonfinite, " of ", b * n,
                    " positions: the weights or the config make the model compute nothing to compare"));
  const torch::Tensor gap = torch::cat(gaps);  // [B·N] float32
  Verification v;
  v.reference = reference;
  v.tokens = b * n;
  v.argmax_equal = torch::cat(equal).sum().item<std::int64_t>();
  v.worst_gap = gap.max().item<double>();
  v.tolerance = tolerance;
  v.over_tolerance = gap.gt(tolerance).sum().item<std::int64_t>();
  v.ok = v.over_tolerance == 0;
  return v;
}

}  // namespace llmbench
