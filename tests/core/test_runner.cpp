#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "llmbench/base/error.h"
#include "llmbench/model/model.h"
#include "llmbench/runner/prompts.h"
#include "llmbench/runner/roofline.h"
#include "llmbench/runner/runner.h"

using namespace llmbench;

namespace {

RunOptions tiny_options() {
  RunOptions o;
  o.model = "tiny";
  o.device = "cpu";
  o.dtype = {"float32"};
  o.batch = {2};
  o.prompt_len = {8};
  o.max_new_tokens = {5};
  o.warmup = 1;
  o.runs = 6;
  o.trim = 1;
  return o;
}

RunHooks no_ceilings() {
  RunHooks h;
  h.measure_ceilings = false;
  return h;
}

double hand_trimmed_median(std::vector<double> v, int trim) {
  std::sort(v.begin(), v.end());
  v = std::vector<double>(v.begin() + trim, v.end() - trim);
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Output verification: more new tokens than kFirstRunIdsMax, so the recorded ids are cut.
RunOptions verify_options() {
  RunOptions o = tiny_options();
  o.max_new_tokens = {70};
  o.warmup = 0;
  o.runs = 3;
  return o;
}

}  // namespace

TEST(Runner, OnePointHasTheRightCountsAndConsistentTimes) {
  Results r = run_benchmark(tiny_options(), no_ceilings());
  ASSERT_EQ(r.points.size(), 1u);
  const PointResult& p = r.points[0];
  ASSERT_EQ(p.status, "ok") << p.error;
  ASSERT_EQ(p.runs.size(), 6u);  // warm-ups are not stored
  EXPECT_EQ(p.weights, "random");
  EXPECT_EQ(p.prompt_source, "synthetic");
  for (const RunRecord& run : p.runs) {
    EXPECT_EQ(run.itl_ms.size(), 4u);  // N - 1
    EXPECT_GT(run.ttft_ms, 0.0);
    EXPECT_LE(run.ttft_ms, run.e2e_ms);
    EXPECT_LE(run.prefill_ms, run.ttft_ms);
    const double stages = run.tokenize_ms + run.kv_init_ms + run.prefill_ms + run.decode_ms + run.detokenize_ms;
    EXPECT_LE(stages, run.e2e_ms + 1e-6);
    double itl_sum = 0;
    for (double x : run.itl_ms) itl_sum += x;
    EXPECT_NEAR(itl_sum, run.decode_ms, 1e-6 * std::max(1.0, run.decode_ms));
    EXPECT_NEAR(run.tpot_ms, run.decode_ms / 4, 1e-9);
  }
  // KV cache: 2 x layers 4 x batch 2 x kv heads 2 x (8 + 5) positions x head dim 32 x 4 bytes.
  EXPECT_EQ(p.memory.kv_cache_bytes, 2u * 4 * 2 * 2 * 13 * 32 * 4);
  EXPECT_GT(p.memory.weights_bytes, 0u);
  EXPECT_GT(p.memory.peak_rss_bytes, 0u);
  EXPECT_GT(p.cold.load_ms, 0.0);
  EXPECT_GT(p.cold.first_generate_ms, 0.0);
  // Which paths ran: on the CPU no fused kernel, so neither the fused step nor the mma decode attention.
  ASSERT_EQ(p.paths.count("decode_attention_mma"), 1u);
  EXPECT_FALSE(p.paths.at("decode_attention_mma"));
  ASSERT_EQ(p.paths.count("gemv_mma"), 1u);  // the tensor-core GEMV: CUDA only
  EXPECT_FALSE(p.paths.at("gemv_mma"));
  ASSERT_EQ(p.paths.count("gemm_lt"), 1u);  // cuBLASLt's per-shape algorithms (on by default): CUDA only
  EXPECT_FALSE(p.paths.at("gemm_lt"));
  EXPECT_FALSE(p.paths.at("fused"));
}

TEST(Runner, SummaryRecomputedFromRawRunsMatches) {
  Results r = run_benchmark(tiny_options(), no_ceilings());
  const PointResult& p = r.points.at(0);
  std::vector<double> ttft, e2e;
  for (const auto& run : p.runs) {
    ttft.push_back(run.ttft_ms);
    e2e.push_back(run.e2e_ms);
  }
  EXPECT_DOUBLE_EQ(p.summary.at("ttft_ms").trimmed_median, hand_trimmed_median(ttft, 1));
  EXPECT_DOUBLE_EQ(p.summary.at("e2e_ms").trimmed_median, hand_trimmed_median(e2e, 1));
  EXPECT_DOUBLE_EQ(p.summary.at("ttft_ms").min, *std::min_element(ttft.begin(), ttft.end()));
  EXPECT_DOUBLE_EQ(p.summary.at("ttft_ms").max, *std::max_element(ttft.begin(), ttft.end()));
  // Output throughput = B * N / e2e, per run.
  std::vector<double> tput;
  for (double x : e2e) tput.push_back(2 * 5 / (x / 1000.0));
  EXPECT_NEAR(p.summary.at("output_tok_s").trimmed_median, hand_trimmed_median(tput, 1), 1e-6);
  // The results file round-trips and its summary equals a fresh summarize_point of its raw runs.
  Results back = results_from_json(to_json(r));
  PointResult again = back.points.at(0);
  summarize_point(again);
  EXPECT_NEAR(again.summary.at("tpot_ms").p90, p.summary.at("tpot_ms").p90, 1e-9);
}

TEST(Runner, SweepRunsTheFactorialProductInOrder) {
  RunOptions o = tiny_options();
  o.batch = {1, 2};
  o.max_new_tokens = {2, 3};
  o.runs = 3;
  o.warmup = 0;
  Results r = run_benchmark(o, no_ceilings());
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.points[0].params.batch, 1);
  EXPECT_EQ(r.points[0].params.max_new_tokens, 2);
  EXPECT_EQ(r.points[1].params.max_new_tokens, 3);
  EXPECT_EQ(r.points[3].params.batch, 2);
  for (const auto& p : r.points) {
    EXPECT_EQ(p.status, "ok");
    EXPECT_EQ(p.runs.size(), 3u);
    EXPECT_EQ(p.runs[0].itl_ms.size(), static_cast<size_t>(p.params.max_new_tokens - 1));
  }
}

TEST(Runner, AFailingPointIsRecordedAndTheOthersRun) {
  RunOptions o = tiny_options();
  o.temperature = {0, 0.7};  // only the greedy point is verified: tampered, it fails
  o.runs = 3;
  o.warmup = 0;
  RunHooks h = no_ceilings();
  h.tamper_outputs = [](std::int64_t* ids, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t i = 0; i < rows * cols; ++i) ids[i] = (ids[i] + 1) % 512;
  };
  Results r = run_benchmark(o, h);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].status, "failed");
  EXPECT_TRUE(r.points[0].runs.empty());
  EXPECT_EQ(r.points[1].status, "ok") << r.points[1].error;
}

TEST(Runner, ASweepWithAPointThatCannotFitIsRefusedBeforeLoading) {
  RunOptions o = tiny_options();
  o.batch = {1, 50000000};  // the second point's KV cache would need hundreds of GiB
  o.runs = 3;
  o.warmup = 0;
  try {
    run_benchmark(o, no_ceilings());
    FAIL() << "expected a refusal";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny at batch 50000000 x 13 positions (point 2 of 2: float32, bf16 weights, "
                                         "bf16 KV cache) needs ~"),
              std::string::npos)
        << e.what();
  }
}

TEST(Runner, ImpossibleSinglePointIsRefusedBeforeLoading) {
  RunOptions o = tiny_options();
  o.batch = {50000000};
  EXPECT_THROW(run_benchmark(o, no_ceilings()), OutOfMemoryError);
  o = tiny_options();
  o.prompt_len = {5000};  // tiny has 4096 positions
  EXPECT_THROW(run_benchmark(o, no_ceilings()), UsageError);
  o = tiny_options();
  o.runs = 2;  // runs <= 2 * trim
  EXPECT_THROW(run_benchmark(o, no_ceilings()), UsageError);
}

TEST(Runner, TextPromptIsCutOrRepeatedToTheLength) {
  RunOptions o = tiny_options();
  o.prompt = std::string("hello world");
  o.prompt_len = {40};
  o.runs = 3;
  o.warmup = 0;
  Results r = run_benchmark(o, no_ceilings());
  EXPECT_EQ(r.points.at(0).prompt_source, "text-repeated");
  EXPECT_GT(r.points.at(0).runs.at(0).tokenize_ms, 0.0);
  o.prompt = std::string(400, 'x') + " and more words to make it long enough";
  o.prompt_len = {4};
  r = run_benchmark(o, no_ceilings());
  EXPECT_EQ(r.points.at(0).prompt_source, "text-cut");
}

TEST(Prompts, SyntheticIdsAreSeededAndInRange) {
  PromptSpec s;
  s.batch = 3;
  s.prompt_len = 50;
  s.vocab_size = 100;
  s.seed = 7;
  PromptIds a = synthetic_prompts(s), b = synthetic_prompts(s);
  EXPECT_EQ(a.rows, b.rows);
  for (const auto& row : a.rows)
    for (auto id : row) {
      EXPECT_GE(id, 3);
      EXPECT_LT(id, 95);
    }
  s.seed = 8;
  EXPECT_NE(synthetic_prompts(s).rows, a.rows);
}

TEST(Roofline, HandComputedBytesAndFlops) {
  // One layer, hidden 4, 2 heads of dim 2, 1 kv head, intermediate 8, vocab 10, untied.
  ModelShape s{4, 8, 1, 2, 1, 2, 10, false, false};
  // params: embed 40; layer: q 16 + k 8 + v 8 + o 16 + mlp 96 + norms 8 = 152; final norm 4; head 40.
  ModelSize m = model_size(s);
  EXPECT_EQ(m.params, 40 + 152 + 4 + 40);
  EXPECT_EQ(m.embedding_params, 40);
  // decode bytes (bf16): (236 - 40) * 2 + KV 2 * 1 * B1 * 1 * 2 * 2 bytes * (P 4 + N 2 / 2 = 5).
  EXPECT_DOUBLE_EQ(decode_bytes_per_step(s, 1, 4, 2, 2), 196 * 2 + 2.0 * 1 * 1 * 1 * 2 * 2 * 5);
  // prefill flops: 2 x 144 matmul weights (q 16, k 8, v 8, o 16, mlp 96) x 4 tokens + lm_head 2 x 40
  // + attention 4 x 1 layer x 1 batch x 2 heads x 4² positions x 2 head dim.
  EXPECT_DOUBLE_EQ(prefill_flops(s, 1, 4), 2.0 * 144 * 4 + 80 + 4.0 * 2 * 16 * 2);
  Ceilings c{"cuda:0", 1000.0, 100.0, "bfloat16", 8192, 10};
  EXPECT_NEAR(*mbu(1e9, 2.0, c), 1e9 / 2e-3 / 1e12, 1e-12);
  EXPECT_NEAR(*mfu(1e12, 20.0, c), 1e12 / 20e-3 / 100e12, 1e-12);
  EXPECT_FALSE(mbu(1e9, 2.0, std::nullopt).has_value());
}

TEST(RunnerVerify, GreedyPointsRecordTheirIdsConsistencyAndVerification) {
  Results r = run_benchmark(verify_options(), no_ceilings());
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
  Results r = run_benchmark(verify_options(), h);
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
  RunOptions o = verify_options();
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
