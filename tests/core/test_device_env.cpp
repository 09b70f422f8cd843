#include <gtest/gtest.h>

#include "llmbench/base/error.h"
#include "llmbench/bench/device_env.h"

using namespace llmbench;

TEST(DeviceEnv, CollectsTorchVersion) {
  EnvInfo e = collect_env();
  EXPECT_FALSE(e.torch_version.empty());
  EXPECT_EQ(e.cuda_available, !e.gpus.empty());
}

TEST(DeviceEnv, ResolveDevice) {
  EXPECT_EQ(resolve_device("cpu"), "cpu");
  EXPECT_THROW(resolve_device("tpu"), UsageError);
  std::string d = resolve_device("auto");
  EXPECT_TRUE(d == "cpu" || d == "cuda");
}

TEST(DeviceEnv, CpuCeilingsArePlausible) {
  Ceilings c = measure_ceilings("cpu", 3);
  EXPECT_EQ(c.device, "cpu");
  EXPECT_GT(c.copy_gb_s, 0.1);       // any machine copies more than 100 MB/s
  EXPECT_LT(c.copy_gb_s, 10000.0);
  EXPECT_GT(c.matmul_tflop_s, 1e-4);  // > 0.1 GFLOP/s
}
