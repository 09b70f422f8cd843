#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmbench/tokenizer/chat.h"

namespace llmbench {

using TokenId = std::int32_t;

// What tokenizer_config.json (or the format's defaults) says around the vocabulary itself.
struct TokenizerInfo {
  std::string source;               // file it was loaded from, or "tiny (built in)"
  std::string kind;                 // "tokenizer.json BPE" or "sentencepiece"
  std::optional<TokenId> bos_id;
  std::optional<TokenId> eos_id;
  std::string bos_token;            // text of the BOS token ("" when none)
  ChatFormat chat_format = ChatFormat::none;
};

// A text ↔ ids codec identical to the model's own tokenizer (HF tokenizers / sentencepiece).
// encode/decode are const and safe to call from several threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Ids of `text` (valid UTF-8, else Error naming the byte offset); add_special adds BOS/EOS as
  // HF's encode(text, add_special_tokens=...) does.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special = true) const = 0;
  // Text of `ids`, invalid UTF-8 replaced by U+FFFD as HF does.
  virtual std::string decode(const std::vector<TokenId>& ids, bool skip_special = false) const = 0;
  // Bytes of `ids` before the U+FFFD replacement, for streaming (may end inside a code point).
  virtual std::string decode_bytes(const std::vector<TokenId>& ids, bool skip_special = false) const = 0;
  // Number of ids, added tokens included.
  virtual std::size_t vocab_size() const = 0;

  const TokenizerInfo& info() const { return info_; }
  std::optional<TokenId> bos_id() const { return info_.bos_id; }
  std::optional<TokenId> eos_id() const { return info_.eos_id; }
  ChatFormat chat_format() const { return info_.chat_format; }
  // `requested`, or (ChatFormat::none) this tokenizer's own format; UsageError when that is none too (a
  // prompt wrapped as a chat message needs a format: --chat-format). `tokenize --chat` asks this.
  ChatFormat chat_format_for(ChatFormat requested) const;
  // For `generate --chat` and `run --chat`: a warning when neither names a format, so that the message is
  // rendered as its content alone (no BOS), as `serve` renders chat requests for such a tokenizer.
  void warn_if_no_chat_format(ChatFormat requested) const;

  // The prompt text of `messages` in `format` (ChatFormat::none: this tokenizer's own format).
  std::string apply_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                         ChatFormat format = ChatFormat::none) const;
  // Ids of that prompt: the template already holds the special tokens, so none are added again.
  std::vector<TokenId> encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                                   ChatFormat format = ChatFormat::none) const;

 protected:
  TokenizerInfo info_;
};

// Loads a tokenizer from a model directory (tokenizer.json first, else tokenizer.model, plus
// tokenizer_config.json when present), from one of those files, or the word "tiny" (built in).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// A tokenizer from tokenizer.json text (and tokenizer_config.json text, may be empty); `source`
// names it in errors.
std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                               const std::string& source);

// The tiny preset's 512-token byte-level BPE, embedded at build time from assets/tiny/.
std::string_view tiny_tokenizer_json();
std::string_view tiny_tokenizer_config_json();

}  // namespace llmbench
