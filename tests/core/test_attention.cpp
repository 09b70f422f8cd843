// Attention's output layout: sdpa kernels may hand back a non-contiguous [B, Hkv, G·S, D] tensor
// (issue 12: "view size is not compatible" at an 8192-token prompt on the H200).
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "llmbench/model/attention.h"

namespace llmbench {
namespace {

TEST(Attention, MergeGroupsAcceptsATransposedLayout) {
  const std::int64_t b = 2, hkv = 2, g = 3, s = 5, d = 4;
  // Stored as [B, G·S, Hkv, D], seen as [B, Hkv, G·S, D]: the layout flash/efficient sdpa returns.
  torch::Tensor stored = torch::randn({b, g * s, hkv, d});
  torch::Tensor out = stored.transpose(1, 2);  // [B, Hkv, G·S, D], not contiguous
  ASSERT_FALSE(out.is_contiguous());
  torch::Tensor merged = merge_groups(out, hkv * g, s);  // [B, Hq, S, D]
  EXPECT_EQ(merged.sizes(), (std::vector<std::int64_t>{b, hkv * g, s, d}));
  EXPECT_TRUE(torch::equal(merged, out.contiguous().view({b, hkv * g, s, d})));
}

#if TORCH_VERSION_MAJOR >= 2
TEST(Attention, SdpaMatchesEagerOnCpu) {
  torch::manual_seed(0);
  const std::int64_t b = 1, hq = 8, hkv = 2, s = 256, d = 64;
  torch::Tensor q = torch::randn({b, hq, s, d}), k = torch::randn({b, hkv, s, d}), v = torch::randn({b, hkv, s, d});
  torch::Tensor mask = torch::ones({s, s}, torch::kBool).tril().view({1, 1, s, s});  // [B, 1, S, T] causal
  torch::Tensor eager = attention(AttnImpl::eager, q, k, v, mask);
  torch::Tensor sdpa = attention(AttnImpl::sdpa, q, k, v, mask);
  EXPECT_TRUE(torch::allclose(sdpa, eager, 1e-4, 1e-4));
}
#endif

}  // namespace
}  // namespace llmbench
