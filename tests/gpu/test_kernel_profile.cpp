// `llmbench profile` on a GPU: the kernels it records for a decode step are the ones decode_step_fused
// launches (counted from the code: per layer one RoPE+KV write, one scores and one pv attention kernel, two
// add+RMSNorm, one SiLU·mul; one more RMSNorm per step), their device time fits in the step's wall time,
// and the graph replay shows the same kernels (or says that the profiler cannot see them).
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <string>

#include "llmbench/base/error.h"
#include "llmbench/bench/kernel_profiler.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/kernel_profile.h"

namespace llmbench {
namespace {

const KernelSplitRow* row(const KernelSplit& s, const std::string& name) {
  for (const auto& r : s.rows)
    if (r.name == name) return &r;
  return nullptr;
}

double calls(const KernelSplit& s, const std::string& name) {
  const KernelSplitRow* r = row(s, name);
  return r ? r->calls_per_step : 0;
}

TEST(GpuKernelProfile, DecodeStepShowsTheFusedKernelsOncePerLayer) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  if (!kernel_profiler_available()) GTEST_SKIP() << "libtorch < 1.13: no profiler API";
  ProfileOptions o;
  o.model = std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias";
  o.batch = 2;
  o.prompt_len = 16;
  o.steps = 4;
  o.warmup = 1;
  const double layers = static_cast<double>(resolve_model(o.model).config.num_layers);
  const ProfileReport report = profile_kernels(o);
  ASSERT_EQ(report.splits.size(), 3u);  // prefill, graph replay, eager
  const KernelSplit& prefill = report.splits[0];
  const KernelSplit& graph = report.splits[1];
  const KernelSplit& eager = report.splits[2];
  for (const auto& s : report.splits) std::cout << format_kernel_split(s) << std::endl;

  EXPECT_EQ(prefill.unit, "prefill");
  EXPECT_EQ(prefill.steps, 1);
  EXPECT_GT(prefill.calls, 10 * layers);  // GEMMs, norms, softmax… of every layer
  EXPECT_EQ(calls(prefill, "rope_qkv_kernel"), 0) << "the prefill runs the plain ops";

  EXPECT_EQ(eager.steps, 4);
  EXPECT_EQ(calls(eager, "rope_qkv_kernel"), layers);
  EXPECT_EQ(calls(eager, "scores_kernel"), layers);
  EXPECT_EQ(calls(eager, "pv_kernel"), layers);
  EXPECT_EQ(calls(eager, "silu_mul_kernel"), layers);
  EXPECT_EQ(calls(eager, "rms_norm_kernel"), 2 * layers + 1);
  for (const KernelSplit* s : {&prefill, &eager, &graph}) {
    SCOPED_TRACE(s->title);
    EXPECT_GT(s->kernel_us, 0);
    EXPECT_GT(s->wall_us, 0);
    // One stream, kernels one after another: their time cannot exceed the wall time (10 %: the wall time
    // and the kernel times come from different runs of the same calls).
    EXPECT_LE(s->kernel_us, 1.1 * s->wall_us);
  }
  // The replay launches the same kernels as the eager step (plus the copy of the tokens into the graph's
  // input), unless the profiler cannot see inside graphs; then the split says it fell back.
  if (graph.title.find("kernels from the eager steps") == std::string::npos) {
    for (const char* k : {"rope_qkv_kernel", "scores_kernel", "pv_kernel", "silu_mul_kernel", "rms_norm_kernel"})
      EXPECT_EQ(calls(graph, k), calls(eager, k)) << k;
    EXPECT_LT(graph.wall_us, eager.wall_us) << "a graph replay should beat eager launches of a tiny model";
  } else {
    // The fallback: the eager steps' kernels against the replay's wall time, and a note saying so.
    std::cout << "[ info     ] the profiler does not see kernels inside CUDA graphs here" << std::endl;
    ASSERT_FALSE(graph.notes.empty());
    EXPECT_NE(graph.notes[0].find("does not see the kernels inside CUDA graphs"), std::string::npos);
    EXPECT_EQ(graph.rows.size(), eager.rows.size());
    EXPECT_EQ(calls(graph, "scores_kernel"), layers);
  }
}

// --mixed-chunks: one more split, the chunked-prefill mixed step (the decode rows' fused attention once
// per layer, the chunks' prompt tokens through the same layers), its kernels within its wall time; bad
// chunk options are usage errors before any model loads.
TEST(GpuKernelProfile, MixedStepOfChunkedPrefill) {
  ProfileOptions bad;
  bad.mixed_chunks = -1;
  EXPECT_THROW(profile_kernels(bad), UsageError);
  bad.mixed_chunks = 1;
  bad.chunk_len = 0;
  EXPECT_THROW(profile_kernels(bad), UsageError);
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  if (!kernel_profiler_available()) GTEST_SKIP() << "libtorch < 1.13: no profiler API";
  ProfileOptions o;
  o.model = std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias";
  o.batch = 2;
  o.prompt_len = 16;
  o.steps = 3;
  o.warmup = 1;
  o.prefill = false;
  o.cuda_graph = false;
  o.mixed_chunks = 2;
  o.chunk_len = 24;
  const double layers = static_cast<double>(resolve_model(o.model).config.num_layers);
  const ProfileReport report = profile_kernels(o);
  ASSERT_EQ(report.splits.size(), 2u);  // eager decode, mixed step
  const KernelSplit& eager = report.splits[0];
  const KernelSplit& mixed = report.splits[1];
  std::cout << format_kernel_split(mixed) << std::endl;
  EXPECT_NE(mixed.title.find("2 decode rows + 2 prompt chunks of 24 tokens"), std::string::npos) << mixed.title;
  EXPECT_EQ(mixed.steps, 3);
  EXPECT_EQ(calls(mixed, "scores_kernel"), calls(eager, "scores_kernel"));  // the decode rows' attention
  EXPECT_EQ(calls(mixed, "scores_kernel"), layers);
  EXPECT_GT(mixed.calls, eager.calls);  // the chunks' attention, copies into the cache
  EXPECT_GT(mixed.kernel_us, 0);
  EXPECT_LE(mixed.kernel_us, 1.1 * mixed.wall_us);
}

}  // namespace
}  // namespace llmbench
