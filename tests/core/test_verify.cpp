#include <gtest/gtest.h>

#include <torch/torch.h>

#include "llmbench/model/model.h"
#include "llmbench/runner/verify.h"

using namespace llmbench;

namespace {

// The reference logits of position `t` of row `r`: a fresh prefill over prompt + the first t tokens.
torch::Tensor reference_logits(Model& m, const std::vector<std::int64_t>& prompt, const std::vector<std::int64_t>& gen,
                               std::size_t t) {
  std::vector<std::int64_t> ids = prompt;
  ids.insert(ids.end(), gen.begin(), gen.begin() + static_cast<std::ptrdiff_t>(t));
  m.allocate_cache(1, static_cast<std::int64_t>(ids.size()));
  m.reset_cache();
  return m.prefill(torch::tensor(ids, torch::kInt64).view({1, -1}))[0];  // [V]
}

}  // namespace

TEST(Verify, GreedyTokensOfTheFastPathAreExactlyTheReferenceArgmax) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 7});
  const std::vector<std::vector<std::int64_t>> prompts = {{5, 9, 11, 3}, {100, 200, 300, 400}};
  GenerateOptions g;
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  GenerateResult out = m->generate(prompts, g);
  torch::Tensor p = torch::tensor(std::vector<std::int64_t>{5, 9, 11, 3, 100, 200, 300, 400}).view({2, 4});
  torch::Tensor gen = torch::empty({2, 6}, torch::kInt64);
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 6; ++t) gen[r][t] = out.tokens[r][t];
  m->allocate_cache(2, 10);
  Verification v = verify_greedy(*m, p, gen, 0.01);
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.tokens, 12);
  EXPECT_EQ(v.argmax_equal, 12);
  EXPECT_EQ(v.over_tolerance, 0);
  EXPECT_DOUBLE_EQ(v.worst_gap, 0.0);
}

TEST(Verify, TheGapOfAWrongTokenIsComputedFromTheReferenceLogits) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 7});
  const std::vector<std::int64_t> prompt = {5, 9, 11, 3};
  GenerateOptions g;
  g.max_new_tokens = 4;
  g.ignore_eos = true;
  std::vector<std::int64_t> gen = m->generate({prompt}, g).tokens[0];
  // Replace token 2 by the reference's least likely token there: its gap is 1 by definition; every later
  // position is judged teacher-forced on the replaced token, so recompute the expectation by hand.
  torch::Tensor l2 = reference_logits(*m, prompt, gen, 2);
  gen[2] = l2.argmin().item<std::int64_t>();
  double worst = 0;
  int over = 0, equal = 0;
  for (std::size_t t = 0; t < gen.size(); ++t) {
    torch::Tensor l = reference_logits(*m, prompt, gen, t);
    const double top = l.max().item<double>(), low = l.min().item<double>(), tok = l[gen[t]].item<double>();
    const double gap = (top - tok) / (top - low);
    worst = std::max(worst, gap);
    over += gap > 0.05;
    equal += l.argmax().item<std::int64_t>() == gen[t];
  }
  m->allocate_cache(1, 8);
  Verification v = verify_greedy(*m, torch::tensor(prompt).view({1, 4}), torch::tensor(gen).view({1, 4}), 0.05);
  EXPECT_FALSE(v.ok);
  EXPECT_NEAR(v.worst_gap, 1.0, 1e-6);
  EXPECT_NEAR(v.worst_gap, worst, 1e-5);
  EXPECT_EQ(v.over_tolerance, over);
  EXPECT_EQ(v.argmax_equal, equal);
  EXPECT_LE(v.argmax_equal, 3);
}

TEST(Verify, ToleranceDependsOnTheDtype) {
  EXPECT_DOUBLE_EQ(verification_tolerance("float32"), 0.01);
  EXPECT_DOUBLE_EQ(verification_tolerance("bfloat16"), 0.10);
  EXPECT_DOUBLE_EQ(verification_tolerance("float16"), 0.10);
}
