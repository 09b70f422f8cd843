#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmbench/tokenizer/chat.h"

namespace llmbench::tok {

// The parts of tokenizer_config.json llmbench uses.
struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::string chat_template;  // "" when none
};

// Parses tokenizer_config.json text ("" → defaults); `source` names the file in errors.
TokenizerConfig parse_tokenizer_config(std::string_view text, const std::string& source);

// The tokenizer_config.json beside the tokenizer file `tokenizer_source` names, for errors.
std::string config_source(const std::string& tokenizer_source);

}  // namespace llmbench::tok
