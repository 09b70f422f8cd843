#include "llmbench/model/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <limits>
#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "llmbench/base/error.h"

namespace llmbench {

at::Generator make_generator(torch::Device device, std::uint64_t seed) {
  if (device.is_cpu()) return at::detail::createCPUGenerator(seed);
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
  torch::Tensor x = logits.to(torch::kFloat32) / params_.temperature;  // [B, V]
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

}  // namespace llmbench
