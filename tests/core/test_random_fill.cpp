// fill_random: deterministic for a key, the same for any number of threads, std 0.02, bounded bell curve;
// random_weights on the CPU uses it.
#include <gtest/gtest.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "llmbench/model/model_config.h"
#include "llmbench/model/presets.h"
#include "llmbench/model/random_fill.h"
#include "llmbench/model/weights.h"

namespace llmbench {
namespace {

const double kBound = std::sqrt(12.0) * 0.02;  // Irwin–Hall(4) scaled to std 0.02

TEST(RandomFill, SameValuesForAnyThreadCount) {
  const int threads = at::get_num_threads();
  torch::Tensor a = torch::empty({1 << 20}), b = torch::empty({1 << 20});
  at::set_num_threads(1);
  fill_random(a, 0.02, random_key(7, 3));
  at::set_num_threads(4);
  fill_random(b, 0.02, random_key(7, 3));
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(a, b));
  torch::Tensor c = torch::empty({1 << 20});
  fill_random(c, 0.02, random_key(7, 4));
  EXPECT_FALSE(torch::equal(a, c));
  // bfloat16 is the float32 draw, rounded.
  torch::Tensor h = torch::empty({1 << 20}, torch::kBFloat16);
  fill_random(h, 0.02, random_key(7, 3));
  EXPECT_TRUE(torch::equal(h, a.to(torch::kBFloat16)));
}

TEST(RandomFill, MeanZeroStdAndBoundedBellShape) {
  torch::Tensor t = torch::empty({1 << 22});
  fill_random(t, 0.02, random_key(0, 0));
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(t.std().item<double>(), 0.02, 2e-4);
  EXPECT_LE(t.abs().max().item<double>(), kBound + 1e-6);
  // Bell-shaped, not uniform: about 66.9 % within one std (a uniform gives 57.7 %, a normal 68.3 %).
  const double within = (t.abs() < 0.02).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(within, 0.669, 0.005);
}

TEST(RandomFill, RandomWeightsOnCpuUseIt) {
  const ModelConfig c = parse_model_config(find_preset("tiny")->config);
  Weights w = random_weights(c, torch::kBFloat16, torch::kCPU, 5);
  EXPECT_EQ(w.embed.scalar_type(), torch::kBFloat16);
  // torch's normal_ would put ~35 of these 65 536 values beyond 3.46 std.
  EXPECT_LE(w.embed.abs().max().item<double>(), kBound * 1.004);
  EXPECT_NEAR(w.layers[0].gate_up.to(torch::kFloat32).std().item<double>(), 0.02, 5e-4);
  EXPECT_TRUE(torch::equal(w.layers[2].down, random_weights(c, torch::kBFloat16, torch::kCPU, 5).layers[2].down));
}

TEST(RandomFill, AHundredMillionBf16ValuesInSeconds) {
  // 7.6 G parameters (a 7B model) at this rate: about a minute on one core, seconds on many; torch's CPU
  // normal_ drew ~70 M/s single-threaded plus a float32 → bf16 conversion.
  torch::Tensor t = torch::empty({100'000'000}, torch::kBFloat16);
  const auto start = std::chrono::steady_clock::now();
  fill_random(t, 0.02, random_key(1, 0));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds", std::to_string(s));
  EXPECT_LT(s, 5.0);
}

}  // namespace
}  // namespace llmbench
