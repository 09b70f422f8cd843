#include <gtest/gtest.h>
#include <torch/torch.h>

#include "llmbench/bench/device_env.h"

using namespace llmbench;

TEST(GpuEnv, SeesTheGpuAndMeasuresCeilings) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  EnvInfo e = collect_env();
  ASSERT_FALSE(e.gpus.empty());
  EXPECT_GT(e.gpus[0].sm_count, 0);
  EXPECT_FALSE(e.cuda_runtime.empty());
  Ceilings c = measure_ceilings("cuda", 10);
  EXPECT_GT(c.copy_gb_s, 500.0);
  EXPECT_GT(c.matmul_tflop_s, 50.0);
}
