#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/model/model_config.h"

// Named models (the exact config.json of a published checkpoint, embedded) and the resolution of a
// --model string: preset, directory, or org/name in the local Hugging Face cache. Torch-free.
namespace llmbench {

struct Preset {
  std::string name;         // "qwen2.5-7b"
  std::string hf_repo;      // "Qwen/Qwen2.5-7B-Instruct"; empty for tiny
  nlohmann::json config;    // config.json as published
};

const std::vector<Preset>& presets();
const Preset* find_preset(const std::string& name);

// Cache roots in lookup order: $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub (unset ones skipped).
std::vector<std::string> hf_cache_roots();
// The snapshot directory of `org/name` (refs/main when present, else the newest snapshot) that holds a
// config.json, or nullopt.
std::optional<std::string> find_in_hf_cache(const std::string& repo);

struct ResolvedModel {
  std::string spec;                           // what the user wrote
  std::string preset;                         // preset name, empty otherwise
  ModelConfig config;
  std::optional<std::string> checkpoint_dir;  // holds safetensors; nullopt: random weights
};

// preset → its config (+ its checkpoint when cached); existing directory → its config.json (+ weights
// when it holds safetensors); org/name → the cached snapshot. Throws UsageError naming the places searched.
ResolvedModel resolve_model(const std::string& spec);

}  // namespace llmbench
