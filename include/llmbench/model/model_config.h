#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// The hyper-parameters of a Llama-family decoder, read from a Hugging Face config.json. Torch-free.
namespace llmbench {

enum class RopeType { none, linear, dynamic, llama3 };

// Rotary embedding settings: rope_theta plus rope_scaling (legacy) or rope_parameters (transformers 5).
struct RopeConfig {
  RopeType type = RopeType::none;
  double theta = 10000.0;
  double factor = 1.0;               // linear, dynamic, llama3
  double low_freq_factor = 1.0;      // llama3
  double high_freq_factor = 4.0;     // llama3
  std::int64_t original_max_position_embeddings = 0;  // llama3, dynamic (0: max_position_embeddings)
};

struct ModelConfig {
  std::string architecture;          // "LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM"
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;         // hidden_size / num_heads unless config.json says otherwise
  std::int64_t vocab_size = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  std::int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;             // Qwen2 always; Llama when attention_bias
  bool o_bias = false;               // Llama when attention_bias
  std::string torch_dtype;           // as written ("bfloat16"), empty when absent
  std::optional<std::int64_t> bos_token_id;
  std::vector<std::int64_t> eos_token_ids;
  std::optional<std::int64_t> sliding_window;  // only when active (Mistral; Qwen2 with use_sliding_window)

  std::int64_t q_size() const { return num_heads * head_dim; }
  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
  // Parameter count of the exact shapes (tied lm_head counted once).
  std::int64_t parameter_count() const;
};

// Architectures we run, in the order the error message lists them.
const std::vector<std::string>& supported_architectures();

// Parses config.json content; `source` names the file in errors. Throws Error naming the field for a
// missing/ill-typed/absurd value, an unknown architecture (listing the supported ones) or rope type.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source = "config.json");
ModelConfig load_model_config(const std::string& path);

// Throws UsageError when `context` tokens exceed max_position_embeddings or an active sliding window.
void check_context(const ModelConfig& config, std::int64_t context);

const char* to_string(RopeType type);
// The fields that matter, for results files and `generate --json`.
nlohmann::json to_json(const ModelConfig& config);

}  // namespace llmbench
