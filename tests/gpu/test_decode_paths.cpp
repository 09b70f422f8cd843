#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/model/decode_graph.h"
#include "llmbench/model/model.h"
#include "llmbench/model/prefill_graph.h"
#include "gpu_test_util.h"

using namespace llmbench;

namespace {

// Logits of a prefill and `steps` decode steps fed with the same tokens, on one decode path.
std::vector<torch::Tensor> run_path(Model& m, const torch::Tensor& ids, const std::vector<torch::Tensor>& feed,
                                    DecodeGraph* graph) {
  std::vector<torch::Tensor> out;
  m.reset_cache();
  out.push_back(m.prefill(ids).cpu());
  for (const auto& tok : feed) out.push_back((graph ? graph->step(tok) : m.decode_step(tok)).cpu().clone());
  return out;
}

// The fast paths (fused kernels, CUDA graph replay, both) against the plain ops of the model's attention,
// teacher-forced with the plain path's greedy tokens so that a near-tie cannot make the paths diverge.
void check_paths_match(const char* name, const std::string& attn) {
  SCOPED_TRACE(std::string(name) + " --attn " + attn);
  auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", attn, 0});
  torch::Tensor ids = torch::tensor({17, 45, 203, 9, 88, 150, 31, 250, 4, 66, 123, 77, 5, 199}, torch::kInt64)
                          .view({2, 7}).to(torch::kCUDA);  // [2, 7]
  const int steps = 12;
  m->allocate_cache(2, 7 + steps + 1);
  m->set_fused(false);
  ASSERT_FALSE(m->fused_active());
  std::vector<torch::Tensor> feed;
  {
    m->reset_cache();
    torch::Tensor tok = m->prefill(ids).argmax(-1);
    for (int i = 0; i < steps; ++i) {
      feed.push_back(tok.clone());
      tok = m->decode_step(tok).argmax(-1);
    }
  }
  auto plain = run_path(*m, ids, feed, nullptr);
  m->set_fused(true);
  ASSERT_TRUE(m->fused_active()) << "the fused decode step must apply to --attn " << attn;
  auto fused = run_path(*m, ids, feed, nullptr);
  DecodeGraph graph(*m);
  auto fused_graph = run_path(*m, ids, feed, &graph);
  m->set_fused(false);
  DecodeGraph plain_graph_capture(*m);
  auto plain_graph = run_path(*m, ids, feed, &plain_graph_capture);
  for (size_t i = 0; i < plain.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_LT(rel_diff(fused[i], plain[i]), 2e-2);
    EXPECT_LT(rel_diff(fused_graph[i], plain[i]), 2e-2);
    EXPECT_LT(rel_diff(plain_graph[i], plain[i]), 1e-6);  // same ops, replayed
  }
}

}  // namespace

TEST(DecodePaths, FusedAndGraphMatchThePlainPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* name : {"qwen2_bias", "llama3_tied", "llama_bf16"}) check_paths_match(name, "eager");
}

// The o and down projections with their split-K partials summed by the next add + RMSNorm
// (LLMBENCH_SPLITK_FUSE; the tiny models' GEMMs do not split by themselves, so the counts are forced):
// the fused step, eager and replayed, still matches the plain path.
TEST(DecodePaths, SplitKPartialsInTheNormMatchThePlainPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* splits : {"2", "4"}) {
    setenv("LLMBENCH_SPLITK_FUSE", splits, 1);
    for (const char* name : {"qwen2_bias", "llama3_tied"}) check_paths_match(name, "eager");
  }
  unsetenv("LLMBENCH_SPLITK_FUSE");
}

#if TORCH_VERSION_MAJOR >= 2
// --attn sdpa selects the prefill's attention; the decode step (one query row per sequence over the cache)
// takes the same fused kernel and CUDA graph as eager, and matches sdpa's plain decode step (masked sdpa).
TEST(DecodePaths, SdpaModelDecodesOnTheFusedPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* name : {"qwen2_bias", "llama3_tied"}) check_paths_match(name, "sdpa");
}
#endif

// The fused prefill (RMSNorm, add + RMSNorm, RoPE split, SiLU·mul kernels around the same GEMMs and
// attention) against the plain prefill on a left-padded batch of a longer prompt: the logits of every
// row and the K/V it leaves in the cache, in each attention implementation.
TEST(DecodePaths, FusedPrefillMatchesThePlainPrefill) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* name : {"qwen2_bias", "llama3_tied"}) {
#if TORCH_VERSION_MAJOR >= 2
    for (const char* attn : {"eager", "sdpa"}) {
#else
    for (const char* attn : {"eager"}) {
#endif
      SCOPED_TRACE(std::string(name) + " " + attn);
      auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", attn, 0});
      const std::int64_t b = 3, p = 96;
      torch::Tensor ids = torch::randint(3, 250, {b, p}, torch::kInt64);  // [B, P]
      torch::Tensor mask = torch::ones({b, p}, torch::kInt64);            // [B, P] left-padded rows 1, 2
      mask[1].narrow(0, 0, 20).zero_();
      mask[2].narrow(0, 0, 90).zero_();
      ids = ids.to(torch::kCUDA);
      mask = mask.to(torch::kCUDA);
      m->allocate_cache(b, p + 4);
      m->set_fused(false);
      m->reset_cache();
      torch::Tensor plain = m->prefill(ids, mask).cpu();                   // [B, V]
      torch::Tensor plain_cache = m->cache().keys(0).narrow(2, 0, p).to(torch::kFloat32).cpu();
      m->set_fused(true);
      m->reset_cache();
      torch::Tensor fused = m->prefill(ids, mask).cpu();
      torch::Tensor fused_cache = m->cache().keys(0).narrow(2, 0, p).to(torch::kFloat32).cpu();
      // Layer 0's keys: one RMSNorm (its float sum in another order: a bf16 step apart at most, rarely),
      // the same GEMM and the bit-exact RoPE. The logits pass every layer's fused norms: bf16 tolerance.
      EXPECT_LT(rel_diff(fused_cache, plain_cache), 1e-2);
      EXPECT_GT(fused_cache.eq(plain_cache).to(torch::kFloat64).mean().item<double>(), 0.95);
      for (std::int64_t r = 0; r < b; ++r) {
        SCOPED_TRACE(r);
        EXPECT_LT(rel_diff(fused[r], plain[r]), 2e-2);
        EXPECT_EQ(fused[r].argmax().item<std::int64_t>(), plain[r].argmax().item<std::int64_t>());
      }
    }
  }
}

// The prefill captured in a CUDA graph (PrefillGraph, what `run` replays for small prompts) against the
// same prefill launched kernel by kernel: the same logits and cache bit for bit, for two prompts through one
// capture (the static input is read at each replay), and decode steps after it see the same cache and column.
TEST(DecodePaths, PrefillGraphMatchesTheLaunchedPrefill) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* name : {"qwen2_bias", "llama3_tied"}) {
#if TORCH_VERSION_MAJOR >= 2
    for (const char* attn : {"eager", "sdpa"}) {
#else
    for (const char* attn : {"eager"}) {
#endif
      for (bool fused : {true, false}) {
        SCOPED_TRACE(std::string(name) + " " + attn + (fused ? " fused" : " plain"));
        auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", attn, 0});
        m->set_fused(fused);
        const std::int64_t b = 2, p = 40;
        m->allocate_cache(b, p + 8);
        PrefillGraph graph(*m, p);
        EXPECT_EQ(graph.batch(), b);
        EXPECT_EQ(graph.prompt_len(), p);
        EXPECT_GT(graph.activation_bytes(), 0u);
        for (int prompt = 0; prompt < 2; ++prompt) {
          SCOPED_TRACE(prompt);
          torch::Tensor ids = torch::randint(3, 250, {b, p}, torch::kInt64);      // [B, P] on the host
          torch::Tensor tok = torch::tensor({7, 11}, torch::kInt64).to(torch::kCUDA);  // [B]
          m->reset_cache();
          torch::Tensor want = m->prefill(ids).cpu();                              // [B, V]
          torch::Tensor want_k = m->cache().keys(0).narrow(2, 0, p).cpu();
          torch::Tensor want_step = m->decode_step(tok).cpu();
          m->reset_cache();
          torch::Tensor got = graph.prefill(ids).cpu();
          torch::Tensor got_k = m->cache().keys(0).narrow(2, 0, p).cpu();
          torch::Tensor got_step = m->decode_step(tok).cpu();
          EXPECT_TRUE(torch::equal(got, want)) << "logits differ by " << (got - want).abs().max().item<double>();
          EXPECT_TRUE(torch::equal(got_k, want_k)) << "layer 0's keys differ";
          EXPECT_TRUE(torch::equal(got_step, want_step)) << "the decode step after it differs";
        }
        EXPECT_THROW(graph.prefill(torch::ones({b, p - 1}, torch::kInt64)), Error);
      }
    }
  }
}

// Programmatic dependent launch (LLMBENCH_PDL, on by default on sm_90): each kernel may be scheduled while
// the one before it still runs, prefetches its weights and waits for it before touching anything else.
// The same kernels in the same order must give bit-identical logits with and without it — eagerly and
// replayed from a CUDA graph, with the GEMV kernel (both kernels, so both wait) and the fused step.
TEST(DecodePaths, PdlGivesBitIdenticalResults) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* gemv_kernel : {"mma", "simt"}) {
    setenv("LLMBENCH_GEMV_KERNEL", gemv_kernel, 1);
    for (const char* name : {"qwen2_bias", "llama3_tied"}) {
      SCOPED_TRACE(std::string(name) + " gemv " + gemv_kernel);
      auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", "eager", 0});
      torch::Tensor ids = torch::tensor({17, 45, 203, 9, 88, 150, 31, 250, 4, 66, 123, 77, 5, 199}, torch::kInt64)
                              .view({2, 7}).to(torch::kCUDA);  // [2, 7]
      const int steps = 8;
      m->allocate_cache(2, 7 + steps + 1);
      m->set_fused(true);
      m->set_gemv(true);
      ASSERT_TRUE(m->gemv_active(2));
      std::vector<torch::Tensor> feed;
      for (int i = 0; i < steps; ++i) feed.push_back(torch::full({2}, 11 + 7 * i, torch::kInt64).to(torch::kCUDA));
      auto both = [&](const char* pdl) {
        setenv("LLMBENCH_PDL", pdl, 1);
        auto eager = run_path(*m, ids, feed, nullptr);
        DecodeGraph graph(*m);
        auto replayed = run_path(*m, ids, feed, &graph);
        eager.insert(eager.end(), replayed.begin(), replayed.end());
        return eager;
      };
      auto off = both("0"), on = both("1");
      unsetenv("LLMBENCH_PDL");
      for (size_t i = 0; i < off.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_TRUE(torch::equal(on[i], off[i]));
      }
    }
  }
  unsetenv("LLMBENCH_GEMV_KERNEL");
}
