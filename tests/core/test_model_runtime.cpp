// Weights loading errors, random weights, the KV cache's allocation discipline, decode vs full
// recompute, and the sampler.
#include <gtest/gtest.h>

#include "remove_tree.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"

namespace llmbench {
namespace {

namespace fs = std::filesystem;
const std::string kFixtureModels = std::string(LLMBENCH_TEST_DATA) + "/models/";

// A checkpoint directory whose weights are a fixture's and whose config.json is edited by `edit`.
class EditedCheckpoint {
 public:
  EditedCheckpoint(const std::string& fixture, const std::function<void(nlohmann::json&)>& edit) {
    dir_ = fs::temp_directory_path() / ("llmbench_ckpt_" + std::to_string(::getpid()) + "_" + fixture);
    testing_util::remove_tree(dir_.string());
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(kFixtureModels + fixture))
      if (e.path().extension() == ".safetensors" || e.path().filename() == "model.safetensors.index.json")
        fs::copy_file(e.path(), dir_ / e.path().filename());
    auto cfg = nlohmann::json::parse(read_file(kFixtureModels + fixture + "/config.json"));
    edit(cfg);
    std::ofstream(dir_ / "config.json") << cfg.dump();
  }
  ~EditedCheckpoint() { testing_util::remove_tree(dir_.string()); }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

std::string load_error(const std::string& dir) {
  try {
    Model::load({dir, "float32", "cpu", "eager", 0});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Weights, MissingTensorIsNamed) {
  EditedCheckpoint c("llama3_tied", [](auto& j) { j["tie_word_embeddings"] = false; });
  const std::string err = load_error(c.dir());
  EXPECT_NE(err.find("missing tensor 'lm_head.weight'"), std::string::npos) << err;
}

TEST(Weights, ShapeMismatchNamesTensorExpectedAndGot) {
  EditedCheckpoint c("llama3_tied", [](auto& j) { j["intermediate_size"] = 96; });
  const std::string err = load_error(c.dir());
  EXPECT_NE(err.find("'model.layers.0.mlp.gate_proj.weight' has shape [128, 64], expected [96, 64]"), std::string::npos) << err;
}

TEST(Weights, ExtraTensorsAreOnlyAWarning) {
  // Qwen2's q/k/v biases are extras for a Llama without attention_bias: it loads (and warns).
  EditedCheckpoint c("qwen2_bias", [](auto& j) {
    j["architectures"] = {"LlamaForCausalLM"};
    j["model_type"] = "llama";
  });
  auto m = Model::load({c.dir(), "float32", "cpu", "eager", 0});
  EXPECT_FALSE(m->config().qkv_bias);
  EXPECT_EQ(m->info().weights, "checkpoint");
}

TEST(Weights, LoadsInRequestedDtypeWithFusedProjections) {
  auto m = Model::load({kFixtureModels + "qwen2_bias", "bfloat16", "cpu", "eager", 0});
  EXPECT_EQ(m->dtype(), torch::kBFloat16);
  // 300·64 embed + 300·64 head + 2·(64·(64+32+32) + 128 bias + 64·64 + 3·64·128 + 128) + 64, 2 bytes each
  EXPECT_EQ(m->info().weight_bytes, 2 * (2 * 300 * 64 + 2 * (64 * 128 + 128 + 64 * 64 + 3 * 64 * 128 + 128) + 64));
}

TEST(RandomWeights, SeededExactShapesTied) {
  const ModelConfig c = parse_model_config(find_preset("tiny")->config);
  Weights a = random_weights(c, torch::kFloat32, torch::kCPU, 42);
  Weights b = random_weights(c, torch::kFloat32, torch::kCPU, 42);
  Weights d = random_weights(c, torch::kFloat32, torch::kCPU, 43);
  EXPECT_TRUE(torch::equal(a.layers[3].gate_up, b.layers[3].gate_up));
  EXPECT_FALSE(torch::equal(a.layers[3].gate_up, d.layers[3].gate_up));
  EXPECT_EQ(a.layers[0].qkv.sizes(), (std::vector<std::int64_t>{128 + 2 * 64, 128}));
  EXPECT_EQ(a.lm_head.data_ptr(), a.embed.data_ptr());
  EXPECT_EQ(a.bytes(), c.parameter_count() * 4);
  EXPECT_NEAR(a.layers[0].down.std().item<double>(), 0.02, 0.002);
}

TEST(KvCache, AllocatedOnceNeverMovesAndResets) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 1});
  const std::int64_t bytes = m->allocate_cache(2, 16);
  EXPECT_EQ(bytes, 4 * 2 * 2 * 2 * 16 * 32 * 4);  // [L, 2, B, Hkv, T, D] float32
  const void* ptr = m->cache().data_ptr();
  torch::Tensor ids = torch::randint(3, 512, {2, 5}, torch::kInt64);
  torch::Tensor first = m->prefill(ids);
  torch::Tensor tok = first.argmax(-1);
  for (int i = 0; i < 11; ++i) {
    tok = m->decode_step(tok).argmax(-1);
    EXPECT_EQ(m->cache().data_ptr(), ptr);
  }
  EXPECT_THROW(m->decode_step(tok), Error);  // 5 + 11 = 16 columns: full
  EXPECT_GT(m->cache().keys(0).abs().sum().item<double>(), 0);
  m->reset_cache();
  EXPECT_EQ(m->cache().data_ptr(), ptr);
  EXPECT_EQ(m->cache().keys(3).abs().sum().item<double>(), 0);
  EXPECT_EQ(m->allocate_cache(2, 16), bytes);  // same shape: kept
  EXPECT_EQ(m->cache().data_ptr(), ptr);
  EXPECT_TRUE(torch::equal(m->prefill(ids), first));  // a reset run repeats the first
}

TEST(Decoder, DecodeStepsMatchFullRecompute) {
  // Logits of token t from the cache path equal a fresh prefill over the whole sequence (left-padded).
  auto m = Model::load({kFixtureModels + "llama3_tied", "float32", "cpu", "eager", 0});
  torch::Tensor ids = torch::tensor({0, 0, 17, 45, 203, 17, 250, 4, 66, 123}, torch::kInt64).view({2, 5});
  torch::Tensor mask = torch::tensor({0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kInt64).view({2, 5});
  m->allocate_cache(2, 8);
  torch::Tensor tok = m->prefill(ids, mask).argmax(-1);
  torch::Tensor seq = torch::cat({ids, tok.view({2, 1})}, 1);
  for (int step = 0; step < 3; ++step) {
    torch::Tensor cached = m->decode_step(tok);
    auto fresh_model = Model::load({kFixtureModels + "llama3_tied", "float32", "cpu", "eager", 0});
    fresh_model->allocate_cache(2, seq.size(1));
    torch::Tensor full_mask = torch::cat({mask, torch::ones({2, step + 1}, torch::kInt64)}, 1);
    torch::Tensor fresh = fresh_model->prefill(seq, full_mask);
    EXPECT_LT((cached - fresh).abs().max().item<double>(), 1e-4 * fresh.abs().max().item<double>());
    tok = cached.argmax(-1);
    seq = torch::cat({seq, tok.view({2, 1})}, 1);
  }
}

TEST(Sampler, SameSeedSameTokensTopK1IsGreedy) {
  torch::manual_seed(0);
  torch::Tensor logits = torch::randn({4, 50});
  Sampler a({1.0, 0, 1.0, 123}, torch::kCPU), b({1.0, 0, 1.0, 123}, torch::kCPU), c({1.0, 0, 1.0, 124}, torch::kCPU);
  std::vector<torch::Tensor> sa, sb, sc;
  for (int i = 0; i < 20; ++i) sa.push_back(a.sample(logits)), sb.push_back(b.sample(logits)), sc.push_back(c.sample(logits));
  EXPECT_TRUE(torch::equal(torch::stack(sa), torch::stack(sb)));
  EXPECT_FALSE(torch::equal(torch::stack(sa), torch::stack(sc)));

  Sampler greedy({0.0, 0, 1.0, 0}, torch::kCPU), top1({0.8, 1, 1.0, 5}, torch::kCPU), tiny_p({1.0, 0, 1e-6, 5}, torch::kCPU);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(torch::equal(top1.sample(logits), logits.argmax(-1)));
    EXPECT_TRUE(torch::equal(tiny_p.sample(logits), logits.argmax(-1)));
  }
  EXPECT_TRUE(torch::equal(greedy.sample(logits), logits.argmax(-1)));
}

TEST(Sampler, CpuSeedsDifferingAboveBit32DrawDifferently) {
  // mt19937 takes 32 bits: without folding the high half in, seeds 1 and 2^32 + 1 drew alike.
  torch::manual_seed(0);
  torch::Tensor logits = torch::randn({4, 50});  // [4, 50]
  const std::uint64_t one = 1, high = (std::uint64_t(1) << 32) + 1;
  Sampler a({1.0, 0, 1.0, one}, torch::kCPU), b({1.0, 0, 1.0, high}, torch::kCPU), c({1.0, 0, 1.0, high}, torch::kCPU);
  std::vector<torch::Tensor> sa, sb, sc;
  for (int i = 0; i < 20; ++i) sa.push_back(a.sample(logits)), sb.push_back(b.sample(logits)), sc.push_back(c.sample(logits));
  EXPECT_FALSE(torch::equal(torch::stack(sa), torch::stack(sb)));
  EXPECT_TRUE(torch::equal(torch::stack(sb), torch::stack(sc)));
  // Seeds below 2^32 keep torch's own stream (random weights and earlier results files stay as they were).
  EXPECT_TRUE(torch::equal(torch::rand({8}, make_generator(torch::kCPU, 123)),
                           torch::rand({8}, at::detail::createCPUGenerator(123))));
}

TEST(Sampler, TemperaturesTooSmallForFloat32AreArgmax) {
  // logits / 1e-40 in float32 overflow to inf and the softmax to NaN: without the floor the draws were garbage.
  torch::manual_seed(1);
  torch::Tensor logits = torch::randn({4, 50}) * 10;  // [4, 50]
  for (double t : {1e-6, 1e-40, 1e-300, 4.9e-324}) {
    Sampler s({t, 0, 1.0, 7}, torch::kCPU);
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(torch::equal(s.sample(logits), logits.argmax(-1))) << t;
    std::vector<at::Generator> gens;
    for (int r = 0; r < 4; ++r) gens.push_back(make_generator(torch::kCPU, r));
    EXPECT_TRUE(torch::equal(sample_rows(logits, std::vector<double>(4, t), std::vector<double>(4, 1.0), gens),
                             logits.argmax(-1)))
        << t;
  }
}

TEST(Sampler, FrequenciesFollowTheFilteredDistribution) {
  // p = softmax(log [0.5, 0.3, 0.15, 0.05]); top-k 3 renormalises to [0.526, 0.316, 0.158, 0];
  // top-p 0.7 keeps the first two: [0.625, 0.375, 0, 0].
  torch::Tensor logits = torch::tensor({0.5, 0.3, 0.15, 0.05}).log().view({1, 4}).repeat({4000, 1});
  auto freq = [&](SamplingParams p) {
    torch::Tensor ids = Sampler(p, torch::kCPU).sample(logits);
    return torch::bincount(ids, {}, 4).to(torch::kFloat64) / 4000.0;
  };
  torch::Tensor plain = freq({1.0, 0, 1.0, 1});
  torch::Tensor k3 = freq({1.0, 3, 1.0, 2});
  torch::Tensor p07 = freq({1.0, 0, 0.7, 3});
  EXPECT_NEAR(plain[0].item<double>(), 0.5, 0.03);
  EXPECT_NEAR(plain[3].item<double>(), 0.05, 0.015);
  EXPECT_NEAR(k3[0].item<double>(), 0.526, 0.03);
  EXPECT_EQ(k3[3].item<double>(), 0.0);
  EXPECT_NEAR(p07[0].item<double>(), 0.625, 0.03);
  EXPECT_EQ(p07[2].item<double>(), 0.0);
  EXPECT_THROW(Sampler({-1.0, 0, 1.0, 0}, torch::kCPU), UsageError);
  EXPECT_THROW(Sampler({1.0, -2, 1.0, 0}, torch::kCPU), UsageError);
  EXPECT_THROW(Sampler({1.0, 0, 1.5, 0}, torch::kCPU), UsageError);
}

TEST(Generate, StopsAtEosUnlessIgnored) {
  // HF's greedy continuation of prompt 0 is known; declare its 4th token the EOS.
  const auto ref = nlohmann::json::parse(read_file(kFixtureModels + "llama3_tied/reference.json"))["float32"][0];
  const auto hf = ref["greedy_ids"][0].get<std::vector<std::int64_t>>();
  const std::int64_t eos = hf[3];
  const auto stop = static_cast<std::size_t>(std::find(hf.begin(), hf.end(), eos) - hf.begin());
  EditedCheckpoint c("llama3_tied", [&](auto& j) { j["eos_token_id"] = {999, eos}; });
  auto m = Model::load({c.dir(), "float32", "cpu", "eager", 0});
  GenerateOptions o;
  o.max_new_tokens = 24;
  const auto prompt = ref["prompts"][0].get<std::vector<std::int64_t>>();
  auto stopped = m->generate({prompt}, o);
  EXPECT_EQ(stopped.tokens[0], std::vector<std::int64_t>(hf.begin(), hf.begin() + stop + 1));
  o.ignore_eos = true;
  EXPECT_EQ(m->generate({prompt}, o).tokens[0], hf);
  EXPECT_THROW(m->generate({{1, 320}}, o), UsageError);  // outside the 320-token vocabulary
  EXPECT_THROW(m->generate({{}}, o), UsageError);
}

// cuBLASLt timing (on by default; LLMBENCH_GEMM=lt) is CUDA-only: on the CPU tune_gemms does nothing and the logits stay
// those of torch's GEMM.
TEST(Model, TuneGemmsIsANoOpOnTheCpu) {
  auto m = Model::load({kFixtureModels + "llama3_tied", "float32", "cpu", "eager", 0});
  const torch::Tensor ids = torch::tensor({{5, 17, 42, 7}}, torch::kInt64);  // [1, 4]
  m->allocate_cache(1, 8);
  const torch::Tensor before = m->prefill(ids);
  setenv("LLMBENCH_GEMM", "lt", 1);
  EXPECT_EQ(m->tune_gemms({512, 1024}), 0.0);
  m->reset_cache();
  EXPECT_TRUE(torch::equal(m->prefill(ids), before));
  unsetenv("LLMBENCH_GEMM");
}

}  // namespace
}  // namespace llmbench
