#include "llmbench/tokenizer/chat.h"

#include "llmbench/base/error.h"

namespace llmbench {
namespace {

// Jinja's `trim`: whitespace off both ends.
std::string trim(const std::string& s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  std::size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace

ChatFormat parse_chat_format(std::string_view name) {
  if (name == "none") return ChatFormat::none;
  if (name == "llama3") return ChatFormat::llama3;
  if (name == "chatml" || name == "qwen") return ChatFormat::chatml;
  if (name == "deepseek-r1" || name == "deepseek") return ChatFormat::deepseek_r1;
  throw UsageError(cat("unknown chat format '", name, "' (llama3, chatml, deepseek-r1 or none)"));
}

const char* to_string(ChatFormat format) {
  switch (format) {
    case ChatFormat::llama3: return "llama3";
    case ChatFormat::chatml: return "chatml";
    case ChatFormat::deepseek_r1: return "deepseek-r1";
    case ChatFormat::none: break;
  }
  return "none";
}

ChatFormat detect_chat_format(std::string_view chat_template, const std::vector<std::string>& special_tokens) {
  auto has = [&](const char* marker) {
    if (!chat_template.empty()) return chat_template.find(marker) != std::string_view::npos;
    for (const auto& t : special_tokens)
      if (t == marker) return true;
    return false;
  };
  if (has("<\xEF\xBD\x9CUser\xEF\xBD\x9C>")) return ChatFormat::deepseek_r1;  // <｜User｜>
  if (has("<|start_header_id|>")) return ChatFormat::llama3;
  if (has("<|im_start|>")) return ChatFormat::chatml;
  return ChatFormat::none;
}

std::string format_chat(ChatFormat format, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const std::string& bos_token) {
  std::string out;
  switch (format) {
    case ChatFormat::llama3:
      out = bos_token;
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::chatml:
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::deepseek_r1: {
      out = bos_token;
      for (const auto& m : messages)
        if (m.role == "system") out += m.content;
      for (const auto& m : messages) {
        if (m.role == "user") out += "<\xEF\xBD\x9CUser\xEF\xBD\x9C>" + m.content;
        else if (m.role == "assistant")
          out += "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>" + m.content + "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
      }
      if (add_generation_prompt) out += "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C><think>\n";
      return out;
    }
    case ChatFormat::none:
      break;
  }
  for (std::size_t i = 0; i < messages.size(); ++i) out += (i ? "\n" : "") + messages[i].content;
  return out;
}

}  // namespace llmbench
