#include "llmbench/tokenizer/tokenizer.h"

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

namespace llmbench {

std::string Tokenizer::apply_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                  ChatFormat format) const {
  const ChatFormat f = format == ChatFormat::none ? info_.chat_format : format;
  if ((f == ChatFormat::llama3 || f == ChatFormat::deepseek_r1) && info_.bos_token.empty())
    throw UsageError(cat("chat format ", to_string(f), " starts with a BOS token, but tokenizer ", info_.source,
                         " has none (no bos_token in its tokenizer_config.json)"));
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
  return encode(apply_chat(messages, add_generation_prompt, format), false);
}

}  // namespace llmbench
