// Our decoder against HF transformers' own outputs on tiny random checkpoints (tests/data/models,
// made by scripts/reference/make_model_fixtures.py): float32 last-position logits and 24 greedy tokens.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "llmbench/base/fs.h"
#include "llmbench/model/model.h"

namespace llmbench {
namespace {

const std::string kModels = std::string(LLMBENCH_TEST_DATA) + "/models/";

nlohmann::json reference(const std::string& name) {
  return nlohmann::json::parse(read_file(kModels + name + "/reference.json"));
}

torch::Tensor tensor2d(const nlohmann::json& rows, torch::Dtype dtype) {
  std::vector<torch::Tensor> out;
  for (const auto& r : rows) out.push_back(torch::tensor(r.get<std::vector<double>>()).to(dtype));
  return torch::stack(out);
}

// max |ours − ref| / max |ref|, per row, worst row.
double max_rel_error(const torch::Tensor& ours, const torch::Tensor& ref) {
  return ((ours - ref).abs().amax(-1) / ref.abs().amax(-1)).max().item<double>();
}

// Prefill + greedy decode through the facade, like the runner does, for one reference batch.
void check_batch(Model& m, const nlohmann::json& batch, double tol, std::int64_t tokens_to_match) {
  SCOPED_TRACE(batch["name"].get<std::string>());
  torch::Tensor ids = tensor2d(batch["input_ids"], torch::kInt64);        // [B, P]
  torch::Tensor mask = tensor2d(batch["attention_mask"], torch::kInt64);  // [B, P]
  torch::Tensor ref_logits = tensor2d(batch["last_logits"], torch::kFloat32);
  torch::Tensor ref_ids = tensor2d(batch["greedy_ids"], torch::kInt64);   // [B, 24]
  const std::int64_t n = ref_ids.size(1);
  m.allocate_cache(ids.size(0), ids.size(1) + n);
  m.reset_cache();
  torch::Tensor logits = m.prefill(ids, mask).cpu();
  EXPECT_LT(max_rel_error(logits, ref_logits), tol);
  std::vector<torch::Tensor> got;
  torch::Tensor next = logits.argmax(-1);
  for (std::int64_t i = 0; i < n; ++i) {
    got.push_back(next.cpu());
    if (i + 1 < n) next = m.decode_step(next).argmax(-1);
  }
  torch::Tensor ours = torch::stack(got, 1);  // [B, 24]
  EXPECT_TRUE(torch::equal(ours.narrow(1, 0, tokens_to_match), ref_ids.narrow(1, 0, tokens_to_match)))
      << "ours " << ours << "\nHF " << ref_ids;
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, Float32LogitsAndGreedyIdsMatchHF) {
  const auto ref = reference(GetParam());
  auto m = Model::load({kModels + GetParam(), "float32", "cpu", "eager", 0});
  EXPECT_EQ(m->info().weights, "checkpoint");
  for (const auto& batch : ref["float32"]) check_batch(*m, batch, 1e-4, 24);
}

TEST_P(Parity, SdpaAgreesWithEager) {
#if TORCH_VERSION_MAJOR < 2
  GTEST_SKIP() << "sdpa needs libtorch >= 2.0";
#else
  const auto ref = reference(GetParam());
  auto m = Model::load({kModels + GetParam(), "float32", "cpu", "sdpa", 0});
  for (const auto& batch : ref["float32"]) check_batch(*m, batch, 1e-4, 24);
#endif
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::Values("llama3_tied", "qwen2_bias", "llama_sharded", "llama_bf16"));

TEST(Parity, FixturesCoverWhatTheyClaim) {
  // The checks above only mean something if the checkpoints exercise these features.
  auto llama3 = load_model_config(kModels + "llama3_tied/config.json");
  EXPECT_EQ(llama3.rope.type, RopeType::llama3);
  EXPECT_TRUE(llama3.tie_word_embeddings);
  auto qwen = load_model_config(kModels + "qwen2_bias/config.json");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.tie_word_embeddings);
  EXPECT_TRUE(std::filesystem::exists(kModels + "llama_sharded/model.safetensors.index.json"));
  EXPECT_EQ(reference("llama_bf16")["storage_dtype"], "bfloat16");
  const auto unequal = reference("qwen2_bias")["float32"][1]["attention_mask"][1];
  EXPECT_EQ(unequal[0], 0);  // left padding present
}

TEST(Parity, PaddedRowMatchesTheSamePromptAlone) {
  // Left padding must not change a row's result: the short prompt alone, unpadded, gives the same ids.
  const auto ref = reference("qwen2_bias");
  const auto& batch = ref["float32"][1];
  auto m = Model::load({kModels + "qwen2_bias", "float32", "cpu", "eager", 0});
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.ignore_eos = true;
  auto alone = m->generate({batch["prompts"][1].get<std::vector<std::int64_t>>()}, o);
  EXPECT_EQ(alone.tokens[0], batch["greedy_ids"][1].get<std::vector<std::int64_t>>());
}

}  // namespace
}  // namespace llmbench
