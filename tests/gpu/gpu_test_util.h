// Helpers the GPU tests share. One definition each: the CPU box compiles a target's test files together (unity
// build, CMakeLists.txt), where two files' file-local helpers of one name would clash.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available"

namespace llmbench {

// The head dimension of the models the kernels are built for (Qwen2.5-7B, Llama-3-8B).
constexpr std::int64_t kHeadDim = 128;

// Normal noise times `scale`, drawn in fp32 on the GPU, returned as bf16.
inline torch::Tensor randn_bf16(std::vector<std::int64_t> shape, double scale = 1.0) {
  return (torch::randn(shape, torch::TensorOptions().device(torch::kCUDA)) * scale).to(torch::kBFloat16);
}

// max |a − b| / max |b| (floored at 1e-6), computed in fp32 on the CPU.
inline double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  torch::Tensor x = a.to(torch::kCPU, torch::kFloat32), y = b.to(torch::kCPU, torch::kFloat32);
  return (x - y).abs().max().item<double>() / std::max(1e-6, y.abs().max().item<double>());
}

}  // namespace llmbench
