#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace llmbench {

// Built-in chat prompt formats (no Jinja engine): the three model families llmbench targets.
enum class ChatFormat { none, llama3, chatml, deepseek_r1 };

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// "llama3", "chatml" (alias "qwen"), "deepseek-r1" (alias "deepseek"), "none"; UsageError otherwise.
ChatFormat parse_chat_format(std::string_view name);
const char* to_string(ChatFormat format);

// The format a tokenizer_config.json chat_template (or, without one, its special tokens) implies.
ChatFormat detect_chat_format(std::string_view chat_template, const std::vector<std::string>& special_tokens);

// The prompt text, as the families' own templates render it; `bos_token` starts Llama 3 and
// DeepSeek-R1 prompts. ChatFormat::none joins the contents with newlines.
std::string format_chat(ChatFormat format, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const std::string& bos_token);

}  // namespace llmbench
