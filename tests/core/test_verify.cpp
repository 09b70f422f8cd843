#include <gtest/gtest.h>

#include <torch/torch.h>

#include "llmbench/model/model.h"
#include "llmbench/runner/prompts.h"
#include "llmbench/runner/runner.h"
#include "llmbench/runner/verify.h"

using namespace llmbench;

namespace {

RunOptions tiny_options() {
  RunOptions o;
  o.model = "tiny";
  o.device = "cpu";
  o.dtype = {"float32"};
  o.batch = {2};
  o.prompt_len = {8};
  o.max_new_tokens = {70};  // more than kFirstRunIdsMax: the record is cut
  o.warmup = 0;
  o.runs = 3;
  o.trim = 1;
  return o;
}

RunHooks no_ceilings() {
  RunHooks h;
  h.measure_ceilings = false;
  return h;
}

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

TEST(RunnerVerify, GreedyPointsRecordTheirIdsConsistencyAndVerification) {
  Results r = run_benchmark(tiny_options(), no_ceilings());
  const PointResult& p = r.points.at(0);
  ASSERT_EQ(p.status, "ok") << p.error;
  ASSERT_EQ(p.outputs.first_run_ids.size(), 2u);
  EXPECT_EQ(p.outputs.first_run_ids[0].size(), 64u);
  ASSERT_TRUE(p.outputs.consistent.has_value());
  EXPECT_TRUE(*p.outputs.consistent);
  ASSERT_TRUE(p.verification.has_value());
  EXPECT_TRUE(p.verification->ok);
  EXPECT_EQ(p.verification->tokens, 2 * 70);
  EXPECT_EQ(p.verification->argmax_equal, 2 * 70);

  // The recorded ids are what Model::generate gives for the same seeded prompts and weights.
  PromptSpec spec;
  spec.batch = 2;
  spec.prompt_len = 8;
  spec.vocab_size = 512;
  spec.seed = 0;
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  GenerateOptions g;
  g.max_new_tokens = 70;
  g.ignore_eos = true;
  GenerateResult expected = m->generate(synthetic_prompts(spec).rows, g);
  for (int row = 0; row < 2; ++row)
    EXPECT_EQ(p.outputs.first_run_ids[row],
              std::vector<std::int64_t>(expected.tokens[row].begin(), expected.tokens[row].begin() + 64));
}

TEST(RunnerVerify, AFastPathThatComputesAnotherModelFailsThePointAndReportsNoLatency) {
  RunHooks h = no_ceilings();
  // Every generated token becomes (id + 1) mod vocab: what a broken kernel would emit.
  h.tamper_outputs = [](std::int64_t* ids, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t i = 0; i < rows * cols; ++i) ids[i] = (ids[i] + 1) % 512;
  };
  Results r = run_benchmark(tiny_options(), h);
  const PointResult& p = r.points.at(0);
  EXPECT_EQ(p.status, "failed");
  EXPECT_NE(p.error.find("verification failed"), std::string::npos) << p.error;
  EXPECT_TRUE(p.runs.empty());
  EXPECT_TRUE(p.summary.empty());
  ASSERT_TRUE(p.verification.has_value());
  EXPECT_FALSE(p.verification->ok);
  EXPECT_GT(p.verification->over_tolerance, 0);
}

TEST(RunnerVerify, NoVerifyAndSampledPointsSkipVerification) {
  RunOptions o = tiny_options();
  o.verify = false;
  Results r = run_benchmark(o, no_ceilings());
  EXPECT_FALSE(r.points.at(0).verification.has_value());
  EXPECT_TRUE(r.points.at(0).outputs.consistent.has_value());

  o.verify = true;
  o.temperature = {0.8};
  r = run_benchmark(o, no_ceilings());
  const PointResult& p = r.points.at(0);
  EXPECT_FALSE(p.verification.has_value());
  EXPECT_FALSE(p.outputs.consistent.has_value());
  EXPECT_EQ(p.outputs.first_run_ids.size(), 2u);
}
