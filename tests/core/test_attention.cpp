// Attention's output layout: sdpa kernels may hand back a non-contiguous [B, Hkv, G·S, D] tensor
// (issue 12: "view size is not compatible" at an 8192-token prompt on the H200). The eager path in query
// tiles against the untiled formula, bit for bit; the prefill mask's facts against their definition.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/model/attention.h"

namespace llmbench {
namespace {

// The untiled eager formula as it stood before tiling (HF's eager attention with GQA folded into rows).
torch::Tensor untiled_eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& mask) {
  const auto b = q.size(0), hq = q.size(1), s = q.size(2), d = q.size(3), hkv = k.size(1), t = k.size(2), g = hq / hkv;
  const double lowest = q.scalar_type() == torch::kFloat32
                            ? std::numeric_limits<float>::lowest()
                            : static_cast<double>(static_cast<float>(std::numeric_limits<c10::BFloat16>::lowest()));
  torch::Tensor qg = q.reshape({b, hkv, g * s, d});                                       // [B, Hkv, G·S, D]
  torch::Tensor scores = torch::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  scores = scores.view({b, hkv, g, s, t}).masked_fill(mask.unsqueeze(2).logical_not(), lowest);  // [B, Hkv, G, S, T]
  torch::Tensor probs = scores.softmax(-1, torch::kFloat32).to(q.scalar_type());
  return torch::matmul(probs.view({b, hkv, g * s, t}), v).reshape({b, hq, s, d});       // [B, Hq, S, D]
}

// attention_mask [B, P]: row b starts with pads[b] zeros.
torch::Tensor left_pad_mask(const std::vector<std::int64_t>& pads, std::int64_t p) {
  torch::Tensor cols = torch::arange(p, torch::kInt64).unsqueeze(0);                   // [1, P]
  return (cols >= torch::tensor(pads, torch::kInt64).unsqueeze(1)).to(torch::kInt64);  // [B, P]
}

TEST(Attention, PrefillMaskFacts) {
  AttnMask m = prefill_mask(left_pad_mask({0, 3, 1}, 6));
  EXPECT_TRUE(m.causal);
  EXPECT_TRUE(m.padded);
  EXPECT_EQ(m.ragged_rows, 3);  // row 1's first token is column 3
  torch::Tensor want = torch::ones({6, 6}, torch::kBool).tril().view({1, 1, 6, 6}).logical_and(
      left_pad_mask({0, 3, 1}, 6).to(torch::kBool).view({3, 1, 1, 6}));
  EXPECT_TRUE(torch::equal(m.allowed, want));
  m = prefill_mask(torch::ones({2, 5}, torch::kInt64));
  EXPECT_FALSE(m.padded);
  EXPECT_EQ(m.ragged_rows, 0);
  // Told that there is no padding (no read-back): the same mask and facts.
  const AttnMask told = prefill_mask(torch::ones({2, 5}, torch::kInt64), /*unpadded=*/true);
  EXPECT_TRUE(told.causal && !told.padded && told.ragged_rows == 0);
  EXPECT_TRUE(torch::equal(told.allowed, m.allowed));
  EXPECT_TRUE(told.allowed.is_contiguous());
  // A hole in the middle still pads; a row with no token at all makes every row ragged.
  torch::Tensor holes = torch::ones({1, 5}, torch::kInt64);
  holes[0][2] = 0;
  m = prefill_mask(holes);
  EXPECT_TRUE(m.padded);
  EXPECT_EQ(m.ragged_rows, 0);
  m = prefill_mask(torch::cat({torch::ones({1, 5}, torch::kInt64), torch::zeros({1, 5}, torch::kInt64)}));
  EXPECT_EQ(m.ragged_rows, 5);
}

TEST(Attention, TileRowsStayWithinTheBudget) {
  EXPECT_EQ(eager_tile_rows(1, 28, 8192, 8192), 256);   // 64 Mi / (28 · 8192) = 292 → a multiple of 64
  EXPECT_EQ(eager_tile_rows(4, 28, 512, 512), 512);     // fits whole
  EXPECT_EQ(eager_tile_rows(16, 28, 512, 512), 256);
  EXPECT_EQ(eager_tile_rows(1, 1, 100, 100, 250), 2);   // below 64: not rounded
  EXPECT_EQ(eager_tile_rows(1, 64, 10, 1 << 20, 16), 1);  // at least one row
  for (std::int64_t s : {1, 77, 4096, 8192})
    EXPECT_LE(eager_tile_rows(2, 32, s, s) * 2 * 32 * s, std::max<std::int64_t>(kEagerTileScores, 2 * 32 * s));
}

// Tiles are slices of the same rows: the same bits as the untiled formula for every tile size, with
// left padding, GQA, odd lengths, in float32 and bfloat16; for causal prefill masks the tiles past the
// padded rows read only the columns up to their last row.
TEST(Attention, TiledEagerIsBitIdenticalToUntiled) {
  torch::manual_seed(3);
  const std::int64_t b = 3, hq = 6, hkv = 2, s = 203, d = 16;
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    torch::Tensor q = torch::randn({b, hq, s, d}).to(dtype), k = torch::randn({b, hkv, s, d}).to(dtype),
                  v = torch::randn({b, hkv, s, d}).to(dtype);
    for (const auto& pads : std::vector<std::vector<std::int64_t>>{{0, 0, 0}, {0, 5, 11}, {2, 1, 150}, {0, 203, 4}}) {
      const AttnMask mask = prefill_mask(left_pad_mask(pads, s));
      const torch::Tensor want = untiled_eager(q, k, v, mask.allowed);
      for (std::int64_t tile : {1, 7, 64, 100, 202, 203, 256}) {
        const std::string what = cat(dtype == torch::kFloat32 ? "f32" : "bf16", " pads ", pads[0], ",", pads[1], ",",
                                     pads[2], " tile ", tile);
        torch::Tensor got = attention(AttnImpl::eager, q, k, v, mask, tile);
        ASSERT_EQ(got.sizes(), want.sizes()) << what;
        EXPECT_TRUE(torch::equal(got, want)) << what << ": max diff " << (got - want).abs().max().item<double>();
        // The same with no structure known (every tile reads all columns).
        AttnMask plain;
        plain.allowed = mask.allowed;
        EXPECT_TRUE(torch::equal(attention(AttnImpl::eager, q, k, v, plain, tile), want)) << what << " (plain mask)";
      }
    }
  }
}

// Decode shape (one query row over a longer cache with holes): the untiled formula.
TEST(Attention, EagerDecodeRowMatchesTheFormula) {
  torch::manual_seed(4);
  const std::int64_t b = 2, hq = 8, hkv = 2, t = 50, d = 8;
  torch::Tensor q = torch::randn({b, hq, 1, d}).to(torch::kBFloat16);
  torch::Tensor k = torch::randn({b, hkv, t, d}).to(torch::kBFloat16), v = torch::randn({b, hkv, t, d}).to(torch::kBFloat16);
  torch::Tensor valid = (torch::rand({b, 1, 1, t}) < 0.5);
  EXPECT_TRUE(torch::equal(attention(AttnImpl::eager, q, k, v, valid), untiled_eager(q, k, v, valid)));
}

TEST(Attention, CausalMaskNeedsSquareScores) {
  AttnMask m = prefill_mask(torch::ones({1, 4}, torch::kInt64));
  torch::Tensor q = torch::randn({1, 2, 4, 8}), kv = torch::randn({1, 2, 5, 8});
  EXPECT_THROW(attention(AttnImpl::eager, q, kv, kv, m), Error);
}

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
// sdpa against eager on CPU: the unpadded causal prefill (is_causal, no mask, GQA), a left-padded
// prefill (additive mask), and a decode row over a cache with holes.
TEST(Attention, SdpaMatchesEagerOnCpu) {
  torch::manual_seed(0);
  const std::int64_t b = 2, hq = 8, hkv = 2, s = 67, d = 64;
  torch::Tensor q = torch::randn({b, hq, s, d}), k = torch::randn({b, hkv, s, d}), v = torch::randn({b, hkv, s, d});
  for (const auto& pads : std::vector<std::vector<std::int64_t>>{{0, 0}, {0, 9}}) {
    const AttnMask mask = prefill_mask(left_pad_mask(pads, s));
    EXPECT_EQ(mask.padded, pads[1] > 0);
    torch::Tensor eager = attention(AttnImpl::eager, q, k, v, mask);
    torch::Tensor sdpa = attention(AttnImpl::sdpa, q, k, v, mask);
    ASSERT_EQ(sdpa.sizes(), eager.sizes());
    // Padded rows that see nothing differ by design (eager averages V, sdpa's fully masked rows may not).
    const std::int64_t from = pads[1];
    EXPECT_TRUE(torch::allclose(sdpa.narrow(2, from, s - from), eager.narrow(2, from, s - from), 1e-4, 1e-4))
        << "pad " << pads[1];
    EXPECT_TRUE(torch::allclose(sdpa[0], eager[0], 1e-4, 1e-4)) << "pad " << pads[1];
  }
  torch::Tensor qd = torch::randn({b, hq, 1, d});
  torch::Tensor valid = torch::rand({b, 1, 1, s}) < 0.5;  // [B, 1, 1, T]
  EXPECT_TRUE(torch::allclose(attention(AttnImpl::sdpa, qd, k, v, valid), attention(AttnImpl::eager, qd, k, v, valid),
                              1e-4, 1e-4));
}
#endif

}  // namespace
}  // namespace llmbench
