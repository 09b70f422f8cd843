#include <gtest/gtest.h>
#include <torch/torch.h>

#include "llmbench/runner/runner.h"

using namespace llmbench;

// The fast paths (CUDA graph + fused kernels) of `llmbench run` pass their own verification against the
// reference path in bf16, for a fixture checkpoint of each family and a 7B-width model.
TEST(VerifyGpu, FastPathsPassVerificationInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const std::string& model : {std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias",
                                  std::string(LLMBENCH_TEST_DATA) + "/models/llama3_tied", std::string("tiny")}) {
    SCOPED_TRACE(model);
    RunOptions o;
    o.model = model;
    o.device = "cuda";
    o.dtype = {"bfloat16"};
    o.batch = {1, 4};
    o.prompt_len = {32};
    o.max_new_tokens = {48};
    o.warmup = 1;
    o.runs = 3;
    o.trim = 1;
    RunHooks h;
    h.measure_ceilings = false;
    Results r = run_benchmark(o, h);
    for (const PointResult& p : r.points) {
      ASSERT_EQ(p.status, "ok") << p.error;
      EXPECT_TRUE(p.paths.at("cuda_graph"));
      EXPECT_TRUE(p.paths.at("fused"));
      ASSERT_TRUE(p.verification.has_value());
      EXPECT_TRUE(p.verification->ok);
      EXPECT_EQ(p.verification->tokens, p.params.batch * 48);
      EXPECT_TRUE(p.outputs.consistent.value_or(false));
    }
  }
}
