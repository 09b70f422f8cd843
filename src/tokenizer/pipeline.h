#pragma once
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::tok {

// tokenizer.json's normalizer: rewrites one stretch of text between added tokens.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void apply(std::string& text) const = 0;
};

// A piece of pre-tokenized text; `at_start`: it begins at offset 0 of the input (Metaspace "first").
struct Piece {
  std::string_view text;
  bool at_start;
};

// Storage for pieces that a step rewrote (a deque: its strings never move, so views stay valid).
using PieceStore = std::deque<std::string>;

// tokenizer.json's pre_tokenizer: splits (and may rewrite) pieces.
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void apply(std::vector<Piece>& pieces, PieceStore& store) const = 0;
};

// tokenizer.json's decoder: token strings → strings; `raw` keeps bytes that are not UTF-8 as they
// are (streaming), otherwise they become U+FFFD exactly as HF does.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void apply(std::vector<std::string>& tokens, bool raw) const = 0;
};

// tokenizer.json's post_processor: adds special tokens around the ids of one sequence.
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void apply(std::vector<TokenId>& ids) const = 0;
};

// Builders from the JSON nodes; null → nullptr. An unknown "type" is an Error naming it.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j);
// `token_id` resolves a token string to its id (TemplateProcessing names tokens).
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j);

// True when the pre-tokenizer maps bytes to GPT-2 characters (a ByteLevel step, last in the chain).
bool pre_tokenizer_is_byte_level(const nlohmann::json& j);

}  // namespace llmbench::tok
