// A long prompt through sdpa and eager on CUDA: issue 12's `run --model qwen2.5-7b --prompt-len 8192
// --attn sdpa` failed with "view size is not compatible" because sdpa returned a non-contiguous output.
// Qwen2.5-7B's widths with 2 layers keep it to a few GB.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "../core/remove_tree.h"
#include "llmbench/base/fs.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"

namespace llmbench {
namespace {

TEST(GpuLongPrompt, SdpaMatchesEagerAt8192Tokens) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << "sdpa needs libtorch >= 2.0";
#else
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("llmbench_long_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  nlohmann::json config = find_preset("qwen2.5-7b")->config;
  config["num_hidden_layers"] = 2;
  write_file_atomic(dir + "/config.json", config.dump());  // no safetensors: seeded random weights
  auto m = Model::load({dir, "bfloat16", "cuda", "eager", 0});
  testing_util::remove_tree(dir);

  const std::int64_t p = 8192;
  torch::manual_seed(0);
  torch::Tensor ids = torch::randint(3, 150000, {1, p}, torch::kInt64).cuda();  // [1, P]
  m->allocate_cache(1, p + 8);
  m->reset_cache();
  torch::Tensor eager = m->prefill(ids).cpu();  // [1, V] float32
  m->set_attn(AttnImpl::sdpa);
  m->reset_cache();
  torch::Tensor sdpa = m->prefill(ids).cpu();
  ASSERT_TRUE(torch::isfinite(sdpa).all().item<bool>());
  // bf16 with different reduction orders: close relative to the logit range, same argmax.
  const double scale = eager.abs().max().item<double>();
  EXPECT_LT((sdpa - eager).abs().max().item<double>(), 5e-2 * scale);
  EXPECT_TRUE(torch::equal(sdpa.argmax(-1), eager.argmax(-1)));
  // And a few decode steps after the long prefill.
  torch::Tensor tok = sdpa.argmax(-1).cuda();
  for (int i = 0; i < 4; ++i) tok = m->decode_step(tok).argmax(-1);
  EXPECT_EQ(tok.size(0), 1);
#endif
}

}  // namespace
}  // namespace llmbench
