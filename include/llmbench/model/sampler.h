#pragma once
#include <cstdint>
#include <vector>

#include <torch/torch.h>

// Next-token selection on the device: greedy, temperature, top-k, top-p. No host syncs, so a decode
// step followed by sample() stays capturable.
namespace llmbench {

// Logits are divided by the temperature in float32: below about 1e-38 the quotient overflows to inf and the
// softmax to NaN (garbage tokens). A temperature under this minimum samples at it instead, which is argmax
// but for exact ties (vLLM takes temperatures under the same 1e-5 as greedy).
constexpr double kMinSamplingTemperature = 1e-5;

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy (argmax); (0, kMinSamplingTemperature) samples at that minimum
  std::int64_t top_k = 0;    // 0: off
  double top_p = 1.0;        // 1: off
  std::uint64_t seed = 0;
};

// A generator of `device`'s kind seeded with `seed` (independent of torch's global generators).
at::Generator make_generator(torch::Device device, std::uint64_t seed);

class Sampler {
 public:
  // Throws UsageError for temperature < 0, top_k < 0 or top_p outside (0, 1].
  Sampler(const SamplingParams& params, torch::Device device);

  // logits [B, V] float → token ids [B] int64 on the same device. Same seed and logits → same ids.
  torch::Tensor sample(const torch::Tensor& logits);

  bool greedy() const { return params_.temperature == 0.0; }
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  at::Generator gen_;
};

// Sampling of rows that each have their own parameters and generator (the serving engine's batch):
// row i of logits [n, V] is drawn with temperature[i] > 0, top_p[i] from generators[i], the same id
// Sampler({temperature[i], 0, top_p[i]}) with that generator gives for logits[i] alone. The filtering runs
// batched; only the noise is drawn row by row. → ids [n] int64 on the logits' device, no host sync.
torch::Tensor sample_rows(const torch::Tensor& logits, const std::vector<double>& temperature,
                          const std::vector<double>& top_p, std::vector<at::Generator>& generators);

}  // namespace llmbench
