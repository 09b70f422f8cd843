#include "llmbench/model/presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/model/safetensors.h"

namespace llmbench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Published config.json files, verbatim in the fields that matter.
json qwen25_7b_instruct() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false, "vocab_size": 152064})");
}

json deepseek_r1_distill_qwen_7b() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 10000, "sliding_window": 4096, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "use_cache": true, "use_mrope": false, "use_sliding_window": false,
    "vocab_size": 152064})");
}

json llama3_8b_instruct() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128009], "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 128256})");
}

json llama3_70b_instruct() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128009], "hidden_act": "silu", "hidden_size": 8192,
    "initializer_range": 0.02, "intermediate_size": 28672, "max_position_embeddings": 8192,
    "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 128256})");
}

json qwen25_72b_instruct() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02,
    "intermediate_size": 29568, "max_position_embeddings": 32768, "model_type": "qwen2",
    "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 152064})");
}

// A few MB, for CPU demos and tests; vocab 512 matches the tiny byte-level BPE (1 = BOS, 2 = EOS).
json tiny() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 128, "intermediate_size": 256, "max_position_embeddings": 4096, "model_type": "llama",
    "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": true, "torch_dtype": "float32", "vocab_size": 512})");
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all{
      {"deepseek-r1-7b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", deepseek_r1_distill_qwen_7b()},
      {"llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct", llama3_8b_instruct()},
      {"llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct", llama3_70b_instruct()},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", qwen25_7b_instruct()},
      {"qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct", qwen25_72b_instruct()},
      {"tiny", "", tiny()},
  };
  return all;
}

const Preset* find_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> hf_cache_roots() {
  std::vector<std::string> roots;
  if (auto v = env("HF_HUB_CACHE")) roots.push_back(*v);
  if (auto v = env("HF_HOME")) roots.push_back((fs::path(*v) / "hub").string());
  if (auto v = env("HOME")) roots.push_back((fs::path(*v) / ".cache" / "huggingface" / "hub").string());
  return roots;
}

std::optional<std::string> find_in_hf_cache(const std::string& repo) {
  const auto slash = repo.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string folder = "models--" + repo.substr(0, slash) + "--" + repo.substr(slash + 1);
  for (const auto& root : hf_cache_roots()) {
    const fs::path base = fs::path(root) / folder;
    std::error_code ec;
    if (!fs::is_directory(base / "snapshots", ec)) continue;
    const fs::path ref = base / "refs" / "main";
    if (fs::exists(ref, ec)) {  // the revision the cache says is current, or an error: never another one silently
      const std::string rev = trim(read_file(ref.string()));
      const fs::path snap = base / "snapshots" / rev;
      if (rev.empty() || !fs::exists(snap / "config.json", ec))
        throw Error(cat(ref.string(), " names snapshot '", rev, "', but ", snap.string(), " has no config.json"));
      return snap.string();
    }
    std::optional<fs::path> newest;
    fs::file_time_type newest_time{};
    for (const auto& entry : fs::directory_iterator(base / "snapshots", ec)) {
      if (!fs::exists(entry.path() / "config.json")) continue;
      const auto t = fs::last_write_time(entry.path(), ec);
      if (!newest || t > newest_time) newest = entry.path(), newest_time = t;
    }
    if (newest) return newest->string();
  }
  return std::nullopt;
}

ResolvedModel resolve_model(const std::string& spec) {
  ResolvedModel r;
  r.spec = spec;
  if (const Preset* p = find_preset(spec)) {
    r.preset = p->name;
    const auto cached = p->hf_repo.empty() ? std::nullopt : find_in_hf_cache(p->hf_repo);
    if (cached && has_safetensors(*cached)) {
      r.config = load_model_config((fs::path(*cached) / "config.json").string());
      r.checkpoint_dir = *cached;
    } else {
      r.config = parse_model_config(p->config, "preset " + p->name);
    }
    return r;
  }
  std::error_code ec;
  if (fs::is_directory(spec, ec)) {
    const fs::path cfg = fs::path(spec) / "config.json";
    if (!fs::exists(cfg)) throw UsageError(cat("model directory ", spec, " has no config.json"));
    r.config = load_model_config(cfg.string());
    if (has_safetensors(spec)) r.checkpoint_dir = spec;
    return r;
  }
  std::string names;
  for (const auto& p : presets()) names += (names.empty() ? "" : ", ") + p.name;
  if (spec.find('/') != std::string::npos && spec.front() != '/' && spec.front() != '.') {
    if (auto dir = find_in_hf_cache(spec)) {
      r.config = load_model_config((fs::path(*dir) / "config.json").string());
      if (has_safetensors(*dir)) r.checkpoint_dir = *dir;
      return r;
    }
    std::string roots;
    for (const auto& root : hf_cache_roots()) roots += (roots.empty() ? "" : ", ") + root;
    throw UsageError(cat("model '", spec, "' is not in the Hugging Face cache (searched ", roots,
                         "); presets: ", names));
  }
  throw UsageError(cat("unknown model '", spec, "': not a preset (", names, "), a directory or org/name"));
}

}  // namespace llmbench
