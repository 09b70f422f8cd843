#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "llmbench/tokenizer/tokenizer.h"
#include "tokenizer_config.h"

namespace llmbench {

// A tokenizer from the bytes of a sentencepiece .model file (and tokenizer_config.json text, may be empty).
std::unique_ptr<Tokenizer> sentencepiece_tokenizer(const std::string& model_bytes, std::string_view config_json,
                                                   const std::string& source);

}  // namespace llmbench
