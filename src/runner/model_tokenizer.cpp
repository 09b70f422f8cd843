#include "llmbench/runner/model_tokenizer.h"

#include <filesystem>

namespace llmbench {

std::unique_ptr<Tokenizer> load_model_tokenizer(const ModelInfo& info) {
  namespace fs = std::filesystem;
  if (!info.checkpoint_dir.empty()) {
    const fs::path dir(info.checkpoint_dir);
    if (fs::exists(dir / "tokenizer.json") || fs::exists(dir / "tokenizer.model")) return load_tokenizer(dir.string());
  }
  if (info.preset == "tiny") return load_tokenizer("tiny");
  return nullptr;
}

std::unique_ptr<Tokenizer> load_model_tokenizer(const ResolvedModel& resolved) {
  ModelInfo probe;
  probe.preset = resolved.preset;
  probe.checkpoint_dir = resolved.checkpoint_dir.value_or("");
  return load_model_tokenizer(probe);
}

}  // namespace llmbench
