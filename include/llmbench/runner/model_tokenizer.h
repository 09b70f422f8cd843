#pragma once
#include <memory>

#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

// The tokenizer that belongs to a loaded model: the checkpoint directory's tokenizer.json or
// tokenizer.model, the built-in one for the tiny preset, or null (random weights of a 7B preset without a
// checkpoint: synthetic ids only).
std::unique_ptr<Tokenizer> load_model_tokenizer(const ModelInfo& info);

// The same before any weights load, from where the model resolves to.
std::unique_ptr<Tokenizer> load_model_tokenizer(const ResolvedModel& resolved);

}  // namespace llmbench
