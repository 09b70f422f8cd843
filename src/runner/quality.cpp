#include "llmbench/runner/quality.h"

#include <algorithm>
#include <cmath>

#include "llmbench/base/error.h"

namespace llmbench {

namespace {

// Running sums over chunks of positions.
struct Sums {
  double diff_sq = 0, ref_sq = 0, kl = 0;
  std::int64_t agree = 0, positions = 0;

  void add(const torch::Tensor& logits, const torch::Tensor& ref) {  // [M, V] float32 each
    // NaN compares false and log_softmax of NaN sums to NaN (clamped to 0 below): refuse rather than report
    // a perfect score for a model that computes nothing.
    for (const auto& [t, whose] : {std::pair{&logits, "model's"}, std::pair{&ref, "unquantized reference's"}})
      if (!torch::isfinite(*t).all().item<bool>())
        throw Error(cat("quality: the ", whose, " logits are NaN or infinite: the weights or the config make the model ",
                        "compute nothing to compare"));
    diff_sq += (logits - ref).pow(2).sum().item<double>();
    ref_sq += ref.pow(2).sum().item<double>();
    agree += logits.argmax(1).eq(ref.argmax(1)).sum().item<std::int64_t>();
    torch::Tensor lp = torch::log_softmax(logits, 1), lr = torch::log_softmax(ref, 1);  // [M, V]
    kl += (lr.exp() * (lr - lp)).sum().item<double>();
    positions += logits.size(0);
  }

  Quality result() const {
    Quality q;
    q.positions = positions;
    q.logits_rel_err = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
    q.top1_agreement = positions ? static_cast<double>(agree) / positions : 0;
    q.kl_divergence_mean = positions ? std::max(0.0, kl / positions) : 0;  // ≥ 0 up to rounding
    return q;
  }
};

}  // namespace

Quality compare_logits(const torch::Tensor& logits, const torch::Tensor& reference) {
  if (logits.dim() != 2 || logits.sizes() != reference.sizes())
    throw Error(cat("compare_logits: logits ", logits.sizes(), " and reference ", reference.sizes(), " differ"));
  Sums s;
  s.add(logits.to(torch::kFloat32), reference.to(torch::kFloat32));
  return s.result();
}

Quality measure_quality(Model& model, Model& reference, const torch::Tensor& prompts, std::int64_t max_new_tokens) {
  torch::NoGradGuard no_grad;
  const auto b = prompts.size(0), p = prompts.size(1), n = max_new_tokens;
  if (prompts.dim() != 2 || b < 1 || p < 1 || n < 1)
    throw Error(cat("measure_quality: prompts ", prompts.sizes(), ", ", n, " new tokens"));
  const torch::Tensor host = prompts.to(torch::kCPU, torch::kInt64).contiguous();  // [B, P]
  std::vector<std::vector<std::int64_t>> rows;
  for (std::int64_t r = 0; r < b; ++r) {
    const std::int64_t* row = host[r].data_ptr<std::int64_t>();
    rows.emplace_back(row, row + p);
  }
  GenerateOptions greedy;
  greedy.max_new_tokens = n;
  greedy.ignore_eos = true;
  const GenerateResult g = reference.generate(rows, greedy);  // allocates [B, P + N]
  torch::Tensor gen = torch::empty({b, n}, torch::kInt64);      // [B, N]
  for (std::int64_t r = 0; r < b; ++r) gen[r].copy_(torch::tensor(g.tokens[r], torch::kInt64));
  torch::Tensor ids = torch::cat({host, gen.narrow(1, 0, n - 1)}, 1);  // [B, P + N − 1]

  if (model.kv_format() == KvFormat::fp8) {
    // The prefill pass attends over its own fresh K/V and never reads the cache: only decode steps show
    // what the fp8 cache costs. Both models: prefill, then N − 1 decode steps fed the reference's tokens,
    // compared step by step (each holds its own cache, so no logits are kept).
    if (reference.kv_format() != KvFormat::plain) throw Error("measure_quality: the reference's KV cache must be unquantized");
    model.allocate_cache(b, p + n);
    reference.allocate_cache(b, p + n);
    model.reset_cache();
    reference.reset_cache();
    Sums s;
    s.add(model.prefill(host), reference.prefill(host).to(model.device()));  // [B, V] float32 each
    for (std::int64_t i = 0; i + 1 < n; ++i) {
      const torch::Tensor tok = gen.select(1, i);                             // [B] int64
      s.add(model.decode_step(tok), reference.decode_step(tok).to(model.device()));
    }
    Quality q = s.result();
    q.reference = reference.info().dtype;
    return q;
  }

  model.allocate_cache(b, p + n);
  auto hidden = [&](Model& m) {  // [B·N, H] model dtype, after the final norm
    torch::Tensor h = m.forward_normed(ids).narrow(1, p - 1, n);
    return h.reshape({b * n, h.size(-1)});
  };
  const torch::Tensor hq = hidden(model), hr = hidden(reference);
  const torch::Tensor wq = model.lm_head_float32(), wr = reference.lm_head_float32();  // [V, H] float32

  // Rows per chunk: keeps the float32 logits of one chunk near 256 MiB.
  const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{1} << 26) / wq.size(0));
  Sums s;
  for (std::int64_t r = 0; r < b * n; r += chunk) {
    const std::int64_t c = std::min(chunk, b * n - r);
    s.add(torch::nn::functional::linear(hq.narrow(0, r, c).to(torch::kFloat32), wq),
          torch::nn::functional::linear(hr.narrow(0, r, c).to(hq.device(), torch::kFloat32), wr.to(hq.device())));
  }
  Quality q = s.result();
  q.reference = reference.info().dtype;
  return q;
}

}  // namespace llmbench
