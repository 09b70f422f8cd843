#include "llmbench/model/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <algorithm>
#include <limits>
#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "llmbench/base/error.h"

namespace llmbench {

at::Generator make_generator(torch::Device device, std::uint64_t seed) {
  // torch's CPU generator (mt19937) keeps only the low 32 bits of a seed: the high half is folded in, so that
  // seeds differing only above bit 32 (1 and 2^32 + 1) draw differently. Seeds below 2^32 are unchanged.
  if (device.is_cpu()) return at::detail::createCPUGenerator(seed ^ (seed >> 32));
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) {
    at::Generator gen = at::cuda::detail::createCUDAGenerator(device.has_index() ? device.index() : 0);
    gen.set_current_seed(seed);
    return gen;
  }
#endif
  throw Error(cat("no random generator for device ", device.str()));
}

Sampler::Sampler(const SamplingParams& params, torch::Device device)
    : params_(params), gen_(make_generator(device, params.seed)) {
  if (!(params.temperature >= 0)) throw UsageError(cat("--temperature must be >= 0, got ", params.temperature));
  if (params.top_k < 0) throw UsageError(cat("--top-k must be >= 0, got ", params.top_k));
  if (!(params.top_p > 0 && params.top_p <= 1)) throw UsageError(cat("--top-p must be in (0, 1], got ", params.top_p));
}

torch::Tensor Sampler::sample(const torch::Tensor& logits) {
  if (greedy()) return logits.argmax(-1);  // [B] int64
  const double neg_inf = -std::numeric_limits<double>::infinity();
  torch::Tensor x = logits.to(torch::kFloat32) / std::max(params_.temperature, kMinSamplingTemperature);  // [B, V]
  const std::int64_t vocab = x.size(-1);
  if (params_.top_k > 0 && params_.top_k < vocab) {
    torch::Tensor kth = std::get<0>(x.topk(params_.top_k, -1)).narrow(-1, params_.top_k - 1, 1);  // [B, 1]
    x = x.masked_fill(x < kth, neg_inf);
  }
  if (params_.top_p < 1.0) {
    auto [sorted, order] = x.sort(-1, /*descending=*/true);  // [B, V]
    torch::Tensor probs = sorted.softmax(-1);
    // Drop a token when the tokens ranked above it already reach top_p (the first always stays).
    torch::Tensor drop = (probs.cumsum(-1) - probs) >= params_.top_p;
    x = torch::full_like(x, neg_inf).scatter(-1, order, sorted.masked_fill(drop, neg_inf));
  }
  torch::Tensor probs = x.softmax(-1);  // [B, V]
  // argmax(p / E) with E ~ Exp(1) draws from p without a host sync (the exponential race).
  torch::Tensor race = torch::empty_like(probs).exponential_(1.0, gen_);
  return (probs / race).argmax(-1);
}

torch::Tensor sample_rows(const torch::Tensor& logits, const std::vector<double>& temperature,
                          const std::vector<double>& top_p, std::vector<at::Generator>& generators) {
  const std::int64_t n = logits.size(0);
  if (logits.dim() != 2 || static_cast<std::int64_t>(temperature.size()) != n ||
      static_cast<std::int64_t>(top_p.size()) != n || static_cast<std::int64_t>(generators.size()) != n)
    throw Error(cat("sample_rows: logits ", logits.sizes(), " need one temperature, top_p and generator per row"));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor temps = torch::tensor(temperature, f64).clamp_min(kMinSamplingTemperature)
                            .to(logits.device(), torch::kFloat32).view({n, 1});  // [n, 1]
  torch::Tensor x = logits.to(torch::kFloat32) / temps;                                                    // [n, V]
  if (std::any_of(top_p.begin(), top_p.end(), [](double p) { return p < 1.0; })) {
    torch::Tensor ps = torch::tensor(top_p, f64).to(logits.device()).view({n, 1});                       // [n, 1]
    auto [sorted, order] = x.sort(-1, /*descending=*/true);                                              // [n, V]
    torch::Tensor probs = sorted.softmax(-1);
    // As Sampler: drop a token when those ranked above it reach top_p; rows with top_p = 1 keep all.
    torch::Tensor drop = ((probs.cumsum(-1) - probs) >= ps).logical_and(ps < 1.0);
    x = torch::full_like(x, neg_inf).scatter(-1, order, sorted.masked_fill(drop, neg_inf));
  }
  torch::Tensor probs = x.softmax(-1);         // [n, V]
  torch::Tensor race = torch::empty_like(probs);
  for (std::int64_t i = 0; i < n; ++i) race[i].exponential_(1.0, generators[i]);
  return (probs / race).argmax(-1);            // [n]
}

}  // namespace llmbench
