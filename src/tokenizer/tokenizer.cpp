#include "llmbench/tokenizer/tokenizer.h"

#include <algorithm>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/base/utf8.h"

namespace llmbench {

std::string Tokenizer::apply_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                  ChatFormat format) const {
  const ChatFormat f = format == ChatFormat::none ? info_.chat_format : format;
  if ((f == ChatFormat::llama3 || f == ChatFormat::deepseek_r1) && info_.bos_token.empty())
    throw UsageError(cat("chat format ", to_string(f), " starts with a BOS token, but tokenizer ", info_.source,
                         " has none (no bos_token in its tokenizer_config.json)"));
  if ((f == ChatFormat::llama3 || f == ChatFormat::deepseek_r1) && !info_.bos_id) {  // it would be encoded as text
    throw UsageError(cat("chat format ", to_string(f), " starts with the BOS token, but tokenizer ", info_.source,
                         "'s bos_token '", utf8::shortened(info_.bos_token, 80),
                         "' (tokenizer_config.json) is not one of its tokens"));
  }
  return format_chat(f, messages, add_generation_prompt, info_.bos_token);
}

ChatFormat Tokenizer::chat_format_for(ChatFormat requested) const {
  const ChatFormat f = requested == ChatFormat::none ? info_.chat_format : requested;
  if (f == ChatFormat::none)
    throw UsageError(cat("tokenizer ", info_.source, " has no known chat format; pass --chat-format"));
  return f;
}

void Tokenizer::warn_if_no_chat_format(ChatFormat requested) const {
  if (requested == ChatFormat::none && info_.chat_format == ChatFormat::none)
    log::warn(cat("tokenizer ", info_.source, " has no known chat format: --chat gives the message's text alone, ",
                  "without BOS, as `serve` does (--chat-format names one)"));
}

std::vector<TokenId> Tokenizer::encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                            ChatFormat format) const {
  const std::string text = apply_chat(messages, add_generation_prompt, format);
  // tokenizer.json's added tokens are split out of the text by encode itself; sentencepiece encodes a control
  // piece's text ("<s>") as plain text, so the BOS the template writes becomes its id here, as HF's
  // apply_chat_template (which splits special tokens out) gives, and each stretch between is encoded alone.
  if (info_.kind != "sentencepiece" || !info_.bos_id || info_.bos_token.empty()) return encode(text, false);
  std::vector<TokenId> ids;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t at = std::min(text.find(info_.bos_token, from), text.size());
    if (at > from) {
      const std::vector<TokenId> part = encode(std::string_view(text).substr(from, at - from), false);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    if (at == text.size()) break;
    ids.push_back(*info_.bos_id);
    from = at + info_.bos_token.size();
  }
  return ids;
}

}  // namespace llmbench
