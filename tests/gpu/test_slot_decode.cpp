// The slot layout on the GPU: rows of different lengths (per-row cache columns) decoded together, with
// a free row inside the bucket, on the plain path, the fused kernels and a CUDA graph per bucket, after
// prefills one by one or batched in one pass, each row held to the same prompt decoded alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "llmbench/engine/slot_batch.h"
#include "llmbench/model/decode_graph.h"
#include "llmbench/model/model.h"
#include "gpu_test_util.h"

using namespace llmbench;

namespace {

const std::vector<std::vector<std::int64_t>> kPrompts{{17, 45, 203}, {9, 88, 150, 31, 250, 4, 66, 123, 77},
                                                      {5, 199, 12, 40, 41}};
constexpr int kSteps = 10;

// Logits of kSteps decode steps of the three prompts in slots 0..2 of a 4-row bucket (row 3 free), fed
// with `feed[p][i]` (teacher forcing), through model.decode_slots or a graph of that bucket.
// `batched`: the three prompts prefilled in one right-padded pass (Model::prefill_slots), else one by one.
std::vector<std::vector<torch::Tensor>> run_slots(Model& m, const std::vector<std::vector<std::int64_t>>& feed,
                                                  DecodeGraph* graph, bool batched = false) {
  m.reset_cache();
  std::vector<std::vector<torch::Tensor>> out(kPrompts.size());
  if (batched) {
    torch::Tensor ids = torch::zeros({3, 9}, torch::kInt64);  // [3, P_max] right-padded
    std::vector<std::int64_t> lengths;
    for (std::size_t p = 0; p < kPrompts.size(); ++p) {
      lengths.push_back(static_cast<std::int64_t>(kPrompts[p].size()));
      ids[p].narrow(0, 0, lengths.back()).copy_(torch::tensor(kPrompts[p]));
    }
    torch::Tensor logits = m.prefill_slots(0, ids, lengths).cpu();  // [3, V]
    for (std::size_t p = 0; p < kPrompts.size(); ++p) out[p].push_back(logits[p].clone());
  }
  for (std::size_t p = 0; p < kPrompts.size() && !batched; ++p)
    out[p].push_back(m.prefill_slot(static_cast<std::int64_t>(p), torch::tensor(kPrompts[p])).cpu());
  for (int i = 0; i < kSteps; ++i) {
    torch::Tensor tokens = torch::zeros({4}, torch::kInt64);  // [4]: row 3 is free
    for (std::size_t p = 0; p < kPrompts.size(); ++p) tokens[p] = feed[p][i];
    torch::Tensor logits = graph ? graph->step(tokens.cuda()) : m.decode_slots(tokens, 32);  // [4, V]
    for (std::size_t p = 0; p < kPrompts.size(); ++p) out[p].push_back(logits[p].cpu().clone());
  }
  return out;
}

}  // namespace

TEST(SlotDecode, PerRowColumnsMatchEachPromptAloneOnEveryPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  for (const char* name : {"qwen2_bias", "llama_bf16"}) {
    SCOPED_TRACE(name);
    auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", "eager", 0});
    m->set_fused(false);
    // Reference: each prompt alone through the offline path, greedy; its tokens feed every other path.
    std::vector<std::vector<std::int64_t>> feed(kPrompts.size());
    std::vector<std::vector<torch::Tensor>> alone(kPrompts.size());
    for (std::size_t p = 0; p < kPrompts.size(); ++p) {
      m->allocate_cache(1, 32);
      m->reset_cache();
      torch::Tensor logits = m->prefill(torch::tensor(kPrompts[p]).view({1, -1}))[0];
      for (int i = 0; i <= kSteps; ++i) {
        alone[p].push_back(logits.cpu());
        feed[p].push_back(logits.argmax().item<std::int64_t>());
        if (i < kSteps) logits = m->decode_step(torch::tensor({feed[p].back()}))[0];
      }
    }
    m->allocate_cache(4, 32);
    auto plain = run_slots(*m, feed, nullptr);
    auto batched = run_slots(*m, feed, nullptr, /*batched=*/true);
    m->set_fused(true);
    ASSERT_TRUE(m->fused_active());
    auto fused = run_slots(*m, feed, nullptr);
    DecodeGraph fused_graph(*m, 4, 32);
    auto fused_replayed = run_slots(*m, feed, &fused_graph);
    for (std::size_t p = 0; p < kPrompts.size(); ++p) {
      for (int i = 0; i <= kSteps; ++i) {
        SCOPED_TRACE("prompt " + std::to_string(p) + " step " + std::to_string(i));
        EXPECT_LT(rel_diff(plain[p][i], alone[p][i]), 2e-2);
        EXPECT_LT(rel_diff(batched[p][i], alone[p][i]), 2e-2);
        EXPECT_LT(rel_diff(fused[p][i], plain[p][i]), 2e-2);
        EXPECT_LT(rel_diff(fused_replayed[p][i], fused[p][i]), 1e-6);  // same kernels, replayed
      }
    }
  }
}

// The engine's batch with graphs: admissions, a leaving row (compaction) and a new one, each row held to
// its prompt alone.
TEST(SlotDecode, SlotBatchWithGraphsFollowsCompaction) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "float32", "cuda", "eager", 0});
  m->set_fused(true);
  auto ref = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "float32", "cuda", "eager", 0});
  GenerateOptions g;
  g.max_new_tokens = 12;
  g.ignore_eos = true;
  SlotBatch batch(*m, 4, 300, /*cuda_graph=*/true);
  ASSERT_TRUE(batch.graphs());
  std::vector<std::vector<std::int64_t>> got(kPrompts.size());
  std::vector<std::int64_t> row_of{0, 1, -1};
  for (std::size_t p = 0; p < 2; ++p) got[p].push_back(batch.add(kPrompts[p]).argmax().item<std::int64_t>());
  auto step = [&] {
    std::vector<std::int64_t> tokens(batch.size());
    for (std::size_t p = 0; p < kPrompts.size(); ++p)
      if (row_of[p] >= 0) tokens[row_of[p]] = got[p].back();
    torch::Tensor next = batch.step(tokens).argmax(-1).cpu();
    for (std::size_t p = 0; p < kPrompts.size(); ++p)
      if (row_of[p] >= 0) got[p].push_back(next[row_of[p]].item<std::int64_t>());
  };
  for (int i = 0; i < 3; ++i) step();
  got[2].push_back(batch.add(kPrompts[2]).argmax().item<std::int64_t>());
  row_of[2] = 2;
  for (int i = 0; i < 4; ++i) step();
  EXPECT_EQ(batch.remove(0), 2);  // prompt 0 leaves with 8 tokens; prompt 2 moves into row 0
  row_of = {-1, 1, 0};
  while (got[1].size() < 12) step();
  for (std::size_t p = 0; p < kPrompts.size(); ++p) {
    SCOPED_TRACE(p);
    auto want = ref->generate({kPrompts[p]}, g).tokens[0];
    want.resize(got[p].size());
    EXPECT_EQ(got[p], want);
  }
}

// Chunked prefill on the GPU: a prompt fed in two chunks inside mixed steps (fused kernels for the decode
// rows) with a graph step in between, while it sits half-prefilled inside the graph's row bucket (its
// garbage decode write lands on the column its next chunk overwrites); every prompt gets the tokens it
// gets alone.
TEST(SlotDecode, ChunkedPrefillWithGraphsMatchesEachPromptAlone) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "float32", "cuda", "eager", 0});
  m->set_fused(true);
  auto ref = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "float32", "cuda", "eager", 0});
  GenerateOptions g;
  g.max_new_tokens = 10;
  g.ignore_eos = true;
  SlotBatch batch(*m, 4, 300, /*cuda_graph=*/true);
  ASSERT_TRUE(batch.graphs());
  std::vector<std::vector<std::int64_t>> got(kPrompts.size());
  for (std::size_t p = 0; p < 2; ++p) got[p].push_back(batch.add(kPrompts[p]).argmax().item<std::int64_t>());
  ASSERT_EQ(batch.reserve(), 2);
  auto run = [&](const std::vector<SlotBatch::Chunk>& chunks) {
    std::vector<std::int64_t> tokens(batch.size(), 0);
    for (std::size_t p = 0; p < kPrompts.size(); ++p)
      if (batch.active(static_cast<std::int64_t>(p))) tokens[p] = got[p].back();
    std::vector<bool> emits;
    for (std::int64_t r = 0; r < batch.size(); ++r) emits.push_back(batch.active(r));
    for (const auto& c : chunks) emits[c.row] = c.last;
    torch::Tensor next = (chunks.empty() ? batch.step(tokens) : batch.mixed(tokens, chunks)).argmax(-1).cpu();
    for (std::size_t p = 0; p < kPrompts.size(); ++p)
      if (emits[p]) got[p].push_back(next[p].item<std::int64_t>());
  };
  const auto& p2 = kPrompts[2];
  run({{2, std::vector<std::int64_t>(p2.begin(), p2.begin() + 3), false}});
  run({});  // graph step: row 2 is inactive inside the 4-row bucket
  run({{2, std::vector<std::int64_t>(p2.begin() + 3, p2.end()), true}});
  while (got[2].size() < 10) run({});
  for (std::size_t p = 0; p < kPrompts.size(); ++p) {
    SCOPED_TRACE(p);
    auto want = ref->generate({kPrompts[p]}, g).tokens[0];
    want.resize(std::min(want.size(), got[p].size()));
    got[p].resize(want.size());
    EXPECT_EQ(got[p], want);
  }
}
