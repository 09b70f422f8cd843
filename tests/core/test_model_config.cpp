// config.json parsing: the fields we read, the formats HF writes (legacy rope_scaling and transformers 5
// rope_parameters) and an error naming the field for every absurd value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/model/model_config.h"
#include "llmbench/model/presets.h"

namespace llmbench {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096, "bos_token_id": 1,
    "eos_token_id": 2, "torch_dtype": "bfloat16"})");
}

// Parses `j` expecting an Error whose message contains every one of `needles`.
void expect_error(const json& j, std::initializer_list<const char*> needles) {
  try {
    parse_model_config(j, "cfg.json");
    FAIL() << "no error for " << j.dump();
  } catch (const Error& e) {
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, ReadsLlamaFields) {
  const ModelConfig c = parse_model_config(base());
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.rope.type, RopeType::none);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(*c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<std::int64_t>{2});
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.sliding_window);
  // 2·V·H + L·(H·(Q+2KV) + Q·H + 3·H·I + 2H) + H
  EXPECT_EQ(c.parameter_count(), 2 * 300 * 64 + 2 * (64 * 128 + 64 * 64 + 3 * 64 * 128 + 128) + 64);
}

TEST(ModelConfig, EosListHeadDimAndBias) {
  json j = base();
  j["eos_token_id"] = {128001, 128009};
  j["head_dim"] = 32;
  j["attention_bias"] = true;
  const ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{128001, 128009}));
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.q_size(), 128);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_bias);
}

TEST(ModelConfig, Qwen2AlwaysHasQkvBiasAndItsWindowIsOffByDefault) {
  json j = base();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["sliding_window"] = 4096;
  j["use_sliding_window"] = false;
  ModelConfig c = parse_model_config(j);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.sliding_window);
  j["use_sliding_window"] = true;
  EXPECT_EQ(*parse_model_config(j).sliding_window, 4096);
}

TEST(ModelConfig, MistralSlidingWindowLimitsContext) {
  json j = base();
  j["architectures"] = {"MistralForCausalLM"};
  j["sliding_window"] = 100;
  const ModelConfig c = parse_model_config(j);
  EXPECT_NO_THROW(check_context(c, 100));
  EXPECT_THROW(check_context(c, 101), UsageError);
  j["sliding_window"] = nullptr;  // Mistral v0.2+: no window
  EXPECT_NO_THROW(check_context(parse_model_config(j), 4096));
  EXPECT_THROW(check_context(parse_model_config(j), 4097), UsageError);
}

TEST(ModelConfig, RopeScalingLegacyAndTransformers5) {
  json j = base();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.rope.type, RopeType::llama3);
  EXPECT_DOUBLE_EQ(c.rope.factor, 8.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);

  j = base();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // pre-4.40 spelling
  EXPECT_EQ(parse_model_config(j).rope.type, RopeType::linear);
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(parse_model_config(j).rope.type, RopeType::dynamic);

  j = base();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  c = parse_model_config(j);
  EXPECT_EQ(c.rope.type, RopeType::none);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
}

TEST(ModelConfig, RopeParametersAndRopeScalingMustAgree) {
  // Agreeing duplicates (transformers 5 next to a legacy copy) load; rope_scaling without rope_theta
  // takes rope_parameters' theta.
  json j = base();
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}};
  // A top-level rope_theta beside rope_parameters' must agree with it too (legacy readers take the top-level one).
  expect_error(j, {"'rope_theta' (10000)", "'rope_parameters.rope_theta' (1000000)", "disagree"});
  j["rope_theta"] = 1e6;
  EXPECT_DOUBLE_EQ(parse_model_config(j).rope.theta, 1e6);
  j.erase("rope_theta");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.rope.type, RopeType::linear);
  EXPECT_DOUBLE_EQ(c.rope.factor, 2.0);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  j["rope_scaling"] = nullptr;  // null counts as absent
  EXPECT_NO_THROW(parse_model_config(j));

  // Disagreeing ones are an error naming both fields and both values.
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  expect_error(j, {"'rope_parameters'", "'rope_scaling'", "disagree", "factor 2", "factor 4"});
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  expect_error(j, {"rope_parameters", "rope_scaling", "linear", "dynamic"});
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  expect_error(j, {"rope_parameters", "rope_scaling", "disagree"});
  j["rope_scaling"] = {{"rope_type", "default"}, {"rope_theta", 5e5}};
  expect_error(j, {"rope_parameters", "rope_scaling", "rope_theta 500000"});
}

TEST(ModelConfig, ErrorsNameTheField) {
  json j = base();
  j["architectures"] = {"GPT2LMHeadModel"};
  expect_error(j, {"GPT2LMHeadModel", "LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM"});
  j = base();
  j["num_hidden_layers"] = 0;
  expect_error(j, {"num_hidden_layers", "0"});
  j = base();
  j["hidden_size"] = -64;
  expect_error(j, {"hidden_size", "-64"});
  j = base();
  j["num_attention_heads"] = 5;
  j["num_key_value_heads"] = 5;
  expect_error(j, {"num_attention_heads", "hidden_size"});
  j = base();
  j["num_key_value_heads"] = 3;
  expect_error(j, {"num_key_value_heads", "num_attention_heads"});
  j = base();
  j.erase("vocab_size");
  expect_error(j, {"vocab_size", "missing"});
  j = base();
  j["intermediate_size"] = "128";
  expect_error(j, {"intermediate_size", "integer"});
  j = base();
  j["rms_norm_eps"] = -1.0;
  expect_error(j, {"rms_norm_eps"});
  j = base();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error(j, {"yarn", "rope_scaling"});
  j = base();
  j["rope_scaling"] = {{"rope_type", "linear"}};
  expect_error(j, {"factor", "missing"});
  j = base();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_error(j, {"original_max_position_embeddings"});
  j = base();
  j["eos_token_id"] = {2, -1};
  expect_error(j, {"eos_token_id"});
  j = base();
  j["hidden_act"] = "gelu";
  expect_error(j, {"hidden_act"});
  EXPECT_THROW(parse_model_config(json::array()), Error);
}

TEST(Presets, ExactPublishedShapes) {
  const ModelConfig q = parse_model_config(find_preset("qwen2.5-7b")->config);
  EXPECT_EQ(q.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(q.hidden_size, 3584);
  EXPECT_EQ(q.intermediate_size, 18944);
  EXPECT_EQ(q.num_layers, 28);
  EXPECT_EQ(q.num_heads, 28);
  EXPECT_EQ(q.num_kv_heads, 4);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.vocab_size, 152064);
  EXPECT_DOUBLE_EQ(q.rope.theta, 1e6);
  EXPECT_FALSE(q.tie_word_embeddings);
  EXPECT_EQ(q.max_position_embeddings, 32768);
  // Qwen2.5-7B-Instruct's published size: 7.62 B parameters.
  EXPECT_NEAR(q.parameter_count() / 1e9, 7.62, 0.01);

  const ModelConfig d = parse_model_config(find_preset("deepseek-r1-7b")->config);
  EXPECT_EQ(d.hidden_size, 3584);
  EXPECT_DOUBLE_EQ(d.rope.theta, 10000.0);
  EXPECT_EQ(d.max_position_embeddings, 131072);
  EXPECT_EQ(d.eos_token_ids, std::vector<std::int64_t>{151643});

  const ModelConfig l = parse_model_config(find_preset("llama-3-8b")->config);
  EXPECT_EQ(l.architecture, "LlamaForCausalLM");
  EXPECT_EQ(l.hidden_size, 4096);
  EXPECT_EQ(l.intermediate_size, 14336);
  EXPECT_EQ(l.num_layers, 32);
  EXPECT_EQ(l.num_kv_heads, 8);
  EXPECT_EQ(l.vocab_size, 128256);
  EXPECT_DOUBLE_EQ(l.rope.theta, 500000.0);
  EXPECT_EQ(l.eos_token_ids, (std::vector<std::int64_t>{128001, 128009}));
  EXPECT_NEAR(l.parameter_count() / 1e9, 8.03, 0.01);  // Meta-Llama-3-8B: 8.03 B

  const ModelConfig t = parse_model_config(find_preset("tiny")->config);
  EXPECT_EQ(t.vocab_size, 512);  // the tiny BPE's size
  EXPECT_EQ(*t.bos_token_id, 1);
  EXPECT_EQ(t.eos_token_ids, std::vector<std::int64_t>{2});
}

TEST(Presets, ResolutionErrors) {
  EXPECT_THROW(resolve_model("no-such-preset"), UsageError);
  EXPECT_THROW(resolve_model("no-such-org/no-such-model"), UsageError);
  const ResolvedModel r = resolve_model("tiny");
  EXPECT_EQ(r.preset, "tiny");
  EXPECT_FALSE(r.checkpoint_dir);
}

// Published config.json of Meta-Llama-3-70B-Instruct and Qwen2.5-72B-Instruct, and their model cards'
// sizes (70.6 B and 72.7 B parameters).
TEST(Presets, SeventyBillionClass) {
  const ModelConfig l = parse_model_config(find_preset("llama-3-70b")->config);
  EXPECT_EQ(l.architecture, "LlamaForCausalLM");
  EXPECT_EQ(l.hidden_size, 8192);
  EXPECT_EQ(l.intermediate_size, 28672);
  EXPECT_EQ(l.num_layers, 80);
  EXPECT_EQ(l.num_heads, 64);
  EXPECT_EQ(l.num_kv_heads, 8);
  EXPECT_EQ(l.head_dim, 128);
  EXPECT_EQ(l.vocab_size, 128256);
  EXPECT_DOUBLE_EQ(l.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(l.rms_norm_eps, 1e-5);
  EXPECT_EQ(l.max_position_embeddings, 8192);
  EXPECT_FALSE(l.tie_word_embeddings);
  EXPECT_FALSE(l.qkv_bias);
  EXPECT_NEAR(l.parameter_count() / 1e9, 70.55, 0.01);

  const ModelConfig q = parse_model_config(find_preset("qwen2.5-72b")->config);
  EXPECT_EQ(q.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(q.hidden_size, 8192);
  EXPECT_EQ(q.intermediate_size, 29568);
  EXPECT_EQ(q.num_layers, 80);
  EXPECT_EQ(q.num_heads, 64);
  EXPECT_EQ(q.num_kv_heads, 8);
  EXPECT_EQ(q.vocab_size, 152064);
  EXPECT_DOUBLE_EQ(q.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(q.rms_norm_eps, 1e-6);
  EXPECT_EQ(q.max_position_embeddings, 32768);
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_FALSE(q.o_bias);
  EXPECT_FALSE(q.tie_word_embeddings);
  EXPECT_FALSE(q.sliding_window.has_value());
  EXPECT_NEAR(q.parameter_count() / 1e9, 72.71, 0.01);
}

}  // namespace
}  // namespace llmbench
