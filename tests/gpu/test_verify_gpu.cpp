#include <gtest/gtest.h>
#include <torch/torch.h>

#include "llmbench/base/error.h"
#include "llmbench/model/kv_cache.h"
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

// With an fp8 KV cache the reference is the plain decode path through the same fp8 cache (a prefill pass
// never reads the cache, so against it the cache's own quantization would fail points on a near-tie): the
// fast paths pass, and a fast path that emits other tokens still fails.
TEST(VerifyGpu, Fp8KvCacheIsVerifiedThroughThePlainDecodePath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  try {
    check_kv_fp8_supported(torch::Device(torch::kCUDA, 0));
  } catch (const UsageError& e) {
    GTEST_SKIP() << e.what();
  }
  RunOptions o;
  o.model = std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias";
  o.device = "cuda";
  o.dtype = {"bfloat16"};
  o.kv_dtype = {"fp8"};
  o.batch = {1, 4};
  o.prompt_len = {32};
  o.max_new_tokens = {48};
  o.warmup = 1;
  o.runs = 2;
  o.trim = 0;
  RunHooks h;
  h.measure_ceilings = false;
  Results r = run_benchmark(o, h);
  for (const PointResult& p : r.points) {
    ASSERT_EQ(p.status, "ok") << p.error;
    ASSERT_TRUE(p.verification.has_value());
    EXPECT_TRUE(p.verification->ok);
    EXPECT_NE(p.verification->reference.find("fp8 KV cache"), std::string::npos) << p.verification->reference;
    EXPECT_EQ(p.verification->tokens, p.params.batch * 48);
  }
  h.tamper_outputs = [](std::int64_t* ids, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t i = 0; i < rows * cols; ++i) ids[i] = (ids[i] + 1) % 256;
  };
  o.batch = {4};
  Results bad = run_benchmark(o, h);
  ASSERT_EQ(bad.points.size(), 1u);
  EXPECT_EQ(bad.points[0].status, "failed");
  ASSERT_TRUE(bad.points[0].verification.has_value());
  EXPECT_GT(bad.points[0].verification->over_tolerance, 0);
}
