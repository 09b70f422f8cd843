#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

std::string Tokenizer::apply_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                  ChatFormat format) const {
  return format_chat(format == ChatFormat::none ? info_.chat_format : format, messages, add_generation_prompt,
                     info_.bos_token);
}

std::vector<TokenId> Tokenizer::encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                            ChatFormat format) const {
  return encode(apply_chat(messages, add_generation_prompt, format), false);
}

}  // namespace llmbench
