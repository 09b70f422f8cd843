// libFuzzer: tokenizer_config.json (bos/eos tokens, add_*_token, chat_template: a string or HF's list of
// {"name", "template"}) as tokenizer_from_json reads it beside the tiny tokenizer.json (assets/tiny, read once),
// then the chat rendering of apply_chat / encode_chat in the detected format and in each named one.
// Input: tokenizer_config.json, optionally followed by NUL, one flags byte (bit 0: the tokenizer.json also has
// the three families' chat markers as special added tokens, so the format is detected from them when the
// config has no template; bit 1: add_generation_prompt) and NUL-separated role, content, role, content, ...
// Error (UsageError) is a clean refusal; anything else is a bug.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/tokenizer/chat.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace {

// [0]: the tiny tokenizer.json as it is; [1]: with the chat markers added as special tokens.
const std::string& tokenizer_json(bool markers) {
  static const std::string plain = llmbench::read_file(LLMBENCH_SOURCE_DIR "/assets/tiny/tokenizer.json");
  static const std::string with_markers = [] {
    nlohmann::json j = nlohmann::json::parse(plain);
    int id = 512;
    for (const char* m : {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|im_start|>", "<|im_end|>",
                          "<\xEF\xBD\x9CUser\xEF\xBD\x9C>", "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>",
                          "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"})
      j["added_tokens"].push_back({{"id", id++}, {"content", m}, {"single_word", false}, {"lstrip", false},
                                   {"rstrip", false}, {"normalized", false}, {"special", true}});
    return j.dump();
  }();
  return markers ? with_markers : plain;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmbench;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view config = in;
  std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", " Hello, world! "}};
  bool markers = false, generation_prompt = true;
  if (const auto nul = in.find('\0'); nul != std::string_view::npos) {
    config = in.substr(0, nul);
    std::string_view rest = in.substr(nul + 1);
    const unsigned flags = rest.empty() ? 0 : static_cast<unsigned char>(rest.front());
    markers = flags & 1;
    generation_prompt = flags & 2;
    if (!rest.empty()) rest.remove_prefix(1);
    messages.clear();
    std::vector<std::string> fields;
    for (std::size_t at = 0; at <= rest.size();) {
      const std::size_t end = std::min(rest.find('\0', at), rest.size());
      fields.emplace_back(rest.substr(at, end - at));
      at = end + 1;
    }
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) messages.push_back({fields[i], fields[i + 1]});
  }
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = tokenizer_from_json(tokenizer_json(markers), config, "fuzz/tokenizer.json");
  } catch (const Error&) {
    return 0;
  }
  if (tok->info().bos_id && tok->info().bos_token.empty()) __builtin_trap();
  for (ChatFormat f : {ChatFormat::none, ChatFormat::llama3, ChatFormat::chatml, ChatFormat::deepseek_r1}) {
    try {
      const std::string text = tok->apply_chat(messages, generation_prompt, f);
      const ChatFormat used = f == ChatFormat::none ? tok->chat_format() : f;
      // Llama 3 and DeepSeek-R1 prompts start with BOS, which is then one of the tokenizer's tokens.
      if ((used == ChatFormat::llama3 || used == ChatFormat::deepseek_r1) &&
          (!tok->bos_id() || text.compare(0, tok->info().bos_token.size(), tok->info().bos_token) != 0))
        __builtin_trap();
      const std::vector<TokenId> ids = tok->encode_chat(messages, generation_prompt, f);
      if (!text.empty() && ids.empty()) __builtin_trap();
      tok->decode(ids, false);
    } catch (const Error&) {
    }
  }
  try {
    tok->chat_format_for(ChatFormat::none);
  } catch (const Error&) {
  }
  return 0;
}
