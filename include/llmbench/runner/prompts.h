#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

// Where a point's prompts come from, fixed before the timed runs so every run sees the same prompts.
struct PromptSpec {
  int batch = 1;
  int prompt_len = 1;
  std::int64_t vocab_size = 0;    // of the model
  std::uint64_t seed = 0;
  std::optional<std::string> text;  // --prompt / --prompt-file content; empty: synthetic ids
  bool chat = false;
  std::string chat_format;  // with chat: empty is the tokenizer's own, "none" no template
};

// Ids for one timed run, [batch][prompt_len].
struct PromptIds {
  std::vector<std::vector<std::int64_t>> rows;
  std::string source;  // synthetic | text-exact | text-cut | text-repeated
};

// Synthetic ids: uniform over [3, 0.95 * vocab) from a seeded generator, so no special token is drawn.
PromptIds synthetic_prompts(const PromptSpec& spec);

// The text as one user message in the named chat format, encoded without adding special tokens: an empty
// name is the tokenizer's own format (the text alone, with a warning, when it has none), "none" the text alone.
std::vector<TokenId> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& text, const std::string& format);

// Tokenizes the text (the work the timed TTFT includes), then cuts it or repeats it to exactly
// prompt_len ids; every row of the batch gets the same ids. Throws Error when the text is empty.
PromptIds text_prompts(const PromptSpec& spec, const Tokenizer& tokenizer);

}  // namespace llmbench
