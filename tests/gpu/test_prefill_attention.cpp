// Prefill attention on CUDA in Qwen2.5-7B shapes (28 query heads, 4 kv heads, D = 128, bf16):
// the eager path in query tiles against the untiled formula, its memory bound at 8192 tokens, and
// sdpa's dispatch (is_causal + GQA → a fused kernel, not the math fallback) against eager.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "llmbench/bench/memory.h"
#include "llmbench/model/attention.h"

namespace llmbench {
namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available"

constexpr std::int64_t kHq = 28, kHkv = 4, kD = 128;

torch::Tensor randn(std::vector<std::int64_t> shape) {
  return torch::randn(shape, torch::TensorOptions().device(torch::kCUDA)).to(torch::kBFloat16);
}

// The untiled eager formula (HF's eager attention with GQA folded into rows).
torch::Tensor untiled_eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& mask) {
  const auto b = q.size(0), hq = q.size(1), s = q.size(2), d = q.size(3), hkv = k.size(1), t = k.size(2), g = hq / hkv;
  const double lowest = static_cast<float>(std::numeric_limits<c10::BFloat16>::lowest());
  torch::Tensor qg = q.reshape({b, hkv, g * s, d});                                                // [B, Hkv, G·S, D]
  torch::Tensor scores = torch::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  scores = scores.view({b, hkv, g, s, t}).masked_fill(mask.unsqueeze(2).logical_not(), lowest);  // [B, Hkv, G, S, T]
  torch::Tensor probs = scores.softmax(-1, torch::kFloat32).to(q.scalar_type());
  return torch::matmul(probs.view({b, hkv, g * s, t}), v).reshape({b, hq, s, d});                // [B, Hq, S, D]
}

torch::Tensor left_pad_mask(const std::vector<std::int64_t>& pads, std::int64_t p) {
  torch::Tensor cols = torch::arange(p, torch::kInt64).unsqueeze(0);                                   // [1, P]
  return (cols >= torch::tensor(pads, torch::kInt64).unsqueeze(1)).to(torch::kInt64).to(torch::kCUDA);  // [B, P]
}

void expect_close(const torch::Tensor& got, const torch::Tensor& want, double atol, double mean_atol,
                  const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  torch::Tensor err = (got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs();
  torch::Tensor excess = err - (atol + want.to(torch::kFloat32).abs() / 64);  // bf16: a step or two
  EXPECT_LE(excess.max().item<double>(), 0.0) << what << ": max abs error " << err.max().item<double>();
  EXPECT_LT(err.mean().item<double>(), mean_atol) << what;
}

// On CUDA a tile's GEMMs and softmax may be other kernels than the untiled ones (shape-dependent
// choices), so the check is: the same values up to float summation order, almost all bits equal.
TEST(GpuPrefillAttention, TiledEagerMatchesUntiled) {
  REQUIRE_CUDA();
  torch::manual_seed(1);
  const std::int64_t b = 2, s = 2048;
  torch::Tensor q = randn({b, kHq, s, kD}), k = randn({b, kHkv, s, kD}), v = randn({b, kHkv, s, kD});
  for (const auto& pads : std::vector<std::vector<std::int64_t>>{{0, 0}, {0, 300}}) {
    const AttnMask mask = prefill_mask(left_pad_mask(pads, s));
    const torch::Tensor want = untiled_eager(q, k, v, mask.allowed);
    for (std::int64_t tile : {256, 500}) {
      const std::string what = "pad " + std::to_string(pads[1]) + " tile " + std::to_string(tile);
      torch::Tensor got = attention(AttnImpl::eager, q, k, v, mask, tile);
      expect_close(got, want, 2e-3, 1e-4, what);
      EXPECT_GT(got.eq(want).to(torch::kFloat32).mean().item<double>(), 0.9) << what;
    }
  }
}

// Issue 15: an 8192-token eager prefill materialised [B, Hq, 8192, 8192] scores (35.1 GB peak for the
// whole model). Tiled, one layer's attention stays within a tile's scores (≈ 0.6 GB) above its inputs.
TEST(GpuPrefillAttention, EagerMemoryIsBoundedAt8192Tokens) {
  REQUIRE_CUDA();
  torch::manual_seed(2);
  const std::int64_t s = 8192;
  const torch::Device dev(torch::kCUDA, 0);
  torch::Tensor q = randn({1, kHq, s, kD}), k = randn({1, kHkv, s, kD}), v = randn({1, kHkv, s, kD});
  const AttnMask mask = prefill_mask(torch::ones({1, s}, torch::TensorOptions().dtype(torch::kInt64).device(dev)));
  torch::cuda::synchronize();
  reset_peak_memory(dev);
  const std::uint64_t base = peak_allocated_bytes(dev);  // inputs and mask stay allocated
  torch::Tensor out = attention(AttnImpl::eager, q, k, v, mask);
  torch::cuda::synchronize();
  const double extra_gb = static_cast<double>(peak_allocated_bytes(dev) - base) / 1e9;
  // Untiled: 28 · 8192² scores = 1.9 G elements, ≥ 11 GB as bf16 + float. A tile is 64 Mi elements.
  EXPECT_LT(extra_gb, 1.0) << "peak above the inputs";
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{1, kHq, s, kD}));
  // The last rows against the untiled formula on those rows alone (the same math, a slice of the rows).
  const std::int64_t tail = 64;
  torch::Tensor want = untiled_eager(q.narrow(2, s - tail, tail), k, v, mask.allowed.narrow(2, s - tail, tail));
  expect_close(out.narrow(2, s - tail, tail), want, 2e-3, 1e-4, "last 64 rows");
}

#if TORCH_VERSION_MAJOR >= 2
// sdpa: an unpadded prefill goes to a fused kernel (flash / efficient / cuDNN), not the math fallback;
// padded and unpadded prefills agree with eager on every row that sees a token.
TEST(GpuPrefillAttention, SdpaCausalUsesAFusedKernelAndMatchesEager) {
  REQUIRE_CUDA();
  torch::manual_seed(3);
  const std::int64_t s = 1024;
  torch::Tensor q = randn({2, kHq, s, kD}), k = randn({2, kHkv, s, kD}), v = randn({2, kHkv, s, kD});
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  const std::int64_t choice = at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                                    /*enable_gqa=*/true);
  EXPECT_GT(choice, 0) << "scaled_dot_product_attention falls back to math (0) for causal GQA bf16 D=128";
#endif
  for (const auto& pads : std::vector<std::vector<std::int64_t>>{{0, 0}, {0, 77}}) {
    const AttnMask mask = prefill_mask(left_pad_mask(pads, s));
    EXPECT_EQ(mask.padded, pads[1] > 0);
    torch::Tensor eager = attention(AttnImpl::eager, q, k, v, mask);
    torch::Tensor sdpa = attention(AttnImpl::sdpa, q, k, v, mask);
    const std::int64_t from = pads[1];
    expect_close(sdpa.narrow(2, from, s - from), eager.narrow(2, from, s - from), 1e-2, 1e-3,
                 "pad " + std::to_string(pads[1]));
  }
}
#endif

}  // namespace
}  // namespace llmbench
