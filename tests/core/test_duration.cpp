// The duration estimate on hand-computed figures: Qwen2.5-7B's shape (also DeepSeek-R1-Distill-Qwen-7B's)
// on the H200's measured ceilings (docs/performance.md "Floors") and on a CPU.
#include <gtest/gtest.h>

#include "llmbench/base/error.h"
#include "llmbench/bench/memory.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/duration.h"

namespace llmbench {
namespace {

ModelShape qwen7b() {
  ModelShape s;
  s.hidden = 3584;
  s.intermediate = 18944;
  s.layers = 28;
  s.heads = 28;
  s.kv_heads = 4;
  s.head_dim = 128;
  s.vocab = 152064;
  s.qkv_bias = true;
  return s;
}

PointParams point(int batch, int prompt_len, int new_tokens) {
  PointParams p;
  p.batch = batch;
  p.prompt_len = prompt_len;
  p.max_new_tokens = new_tokens;
  p.dtype = "bfloat16";
  return p;
}

Ceilings ceilings(double copy_gb_s, double matmul_tflop_s, const std::string& dtype, const std::string& device) {
  Ceilings c;
  c.copy_gb_s = copy_gb_s;
  c.matmul_tflop_s = matmul_tflop_s;
  c.matmul_dtype = dtype;
  c.device = device;
  return c;
}

TEST(Duration, H200Batch1MatchesTheDocumentedFloors) {
  // Decode step: (7 615 616 512 params − 544 997 376 embedding) · 2 B = 14 141 238 272 B of weights, plus
  // the KV cache at 512 + 32 positions: 2 · 28 layers · 4 heads · 128 · 2 B · 544 = 31 195 136 B;
  // 14 172 433 408 B / 4.25 TB/s = 3.3347 ms. Prefill: 6 788 212 064 256 FLOP / 796 TFLOP/s = 8.5279 ms.
  // 3 warm-ups + 20 runs = 23 generates of 1 prefill + 63 steps.
  const DurationEstimate e =
      estimate_duration(qwen7b(), {point(1, 512, 64)}, 3, 20, ceilings(4250, 796, "bfloat16", "cuda:0"));
  EXPECT_EQ(e.generates, 23);
  EXPECT_EQ(e.decode_steps, 23 * 63);
  EXPECT_NEAR(e.decode_seconds, 1449 * 14172433408.0 / 4.25e12, 1e-9);
  EXPECT_NEAR(e.prefill_seconds, 23 * 6788212064256.0 / 796e12, 1e-9);
  EXPECT_NEAR(e.seconds, 4.8320 + 0.19614, 1e-3);
  EXPECT_FALSE(duration_refusal(e, ceilings(4250, 796, "bfloat16", "cuda:0"), 30));
}

TEST(Duration, SevenBOnACpuIsRefusedWithTheWayOut) {
  // The issue's `run --model deepseek-r1-7b` defaults (batch 4, prompt 512, 64 new, 3 + 20 generates) on a CPU
  // with 20 GB/s copy and 100 GFLOP/s float32 matmul:
  //   decode: (14 141 238 272 + 4 · 31 195 136) B / 20 GB/s = 0.713301 s × 1449 steps = 1033.57 s
  //   prefill: 4 · 6 788 212 064 256 FLOP / 0.1 TFLOP/s = 271.528 s × 23 = 6245.16 s
  //   total 7278.7 s = 2.02 h = 121.3 min → the smallest round limit that passes is 200.
  const Ceilings cpu = ceilings(20, 0.1, "float32", "cpu");
  const DurationEstimate e = estimate_duration(qwen7b(), {point(4, 512, 64)}, 3, 20, cpu);
  EXPECT_NEAR(e.decode_seconds, 1449 * 14266018816.0 / 20e9, 1e-6);
  EXPECT_NEAR(e.prefill_seconds, 23 * 4 * 6788212064256.0 / 1e11, 1e-6);
  EXPECT_NEAR(e.seconds, 7278.7, 0.1);

  const auto refusal = duration_refusal(e, cpu, 30);
  ASSERT_TRUE(refusal);
  for (const char* part : {"estimated at least 2.0 h", "23 generates", "prefills 1.7 h", "1449 decode steps 17 min",
                           "copy 20 GB/s", "float32 matmul 100 GFLOP/s", "measured on cpu", "--max-minutes 30",
                           "pass --max-minutes 200 to run anyway", "--runs"})
    EXPECT_NE(refusal->find(part), std::string::npos) << part << " not in: " << *refusal;
  EXPECT_FALSE(duration_refusal(e, cpu, 200));
  EXPECT_FALSE(duration_refusal(e, cpu, 0));  // 0: no limit
}

TEST(Duration, PointsAddUpAndOneNewTokenHasNoDecodeStep) {
  const Ceilings c = ceilings(10, 1, "bfloat16", "cuda:0");
  const DurationEstimate one = estimate_duration(qwen7b(), {point(1, 128, 1)}, 0, 5, c);
  EXPECT_EQ(one.decode_steps, 0);
  EXPECT_DOUBLE_EQ(one.decode_seconds, 0);
  const DurationEstimate two = estimate_duration(qwen7b(), {point(1, 128, 1), point(1, 128, 1)}, 0, 5, c);
  EXPECT_EQ(two.generates, 10);
  EXPECT_DOUBLE_EQ(two.seconds, 2 * one.seconds);
}

TEST(Duration, FormatDuration) {
  EXPECT_EQ(format_duration(4.25), "4.2 s");
  EXPECT_EQ(format_duration(45), "45 s");
  EXPECT_EQ(format_duration(150), "2.5 min");
  EXPECT_EQ(format_duration(1800), "30 min");
  EXPECT_EQ(format_duration(11520), "3.2 h");
}

TEST(Duration, CheckDurationRefusesBeforeAnythingIsLoaded) {
  const ModelConfig tiny = parse_model_config(find_preset("tiny")->config);
  const Ceilings cpu = ceilings(20, 0.1, "float32", "cpu");
  RunOptions o;
  o.model = "tiny";
  o.batch = {1};
  o.prompt_len = {8};
  o.warmup = 0;
  o.runs = 10000000;  // hours at any speed
  o.trim = 0;
  try {
    check_duration(tiny, expand(o), o, cpu, "cpu");
    FAIL() << "expected a refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("10000000 generates"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pass --max-minutes "), std::string::npos) << e.what();
  }
  o.max_minutes = 0;  // no limit
  EXPECT_NO_THROW(check_duration(tiny, expand(o), o, cpu, "cpu"));

  // Every point counts, one that cannot fit in memory too (run_benchmark refuses that before; it is never
  // silently left out of the estimate): batch 50 000 000 is hours.
  o = RunOptions{};
  o.model = "tiny";
  o.batch = {1, 50000000};
  EXPECT_THROW(check_duration(tiny, expand(o), o, cpu, "cpu"), UsageError);
  // Without measured ceilings a short run does not even measure them.
  o.batch = {1};
  EXPECT_NO_THROW(check_duration(tiny, expand(o), o, std::nullopt, "cpu"));
}

}  // namespace
}  // namespace llmbench
