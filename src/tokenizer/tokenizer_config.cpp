#include "tokenizer_config.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"

namespace llmbench::tok {
namespace {

// A token is written as "text" or {"content": "text", ...}; null means none.
std::optional<std::string> token_text(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw Error(cat(key, " is neither a string nor {\"content\": ...}"));
}

}  // namespace

std::string config_source(const std::string& tokenizer_source) {
  const std::filesystem::path p(tokenizer_source);
  if (p.extension() != ".json" && p.extension() != ".model") return tokenizer_source + " tokenizer_config.json";
  return (p.parent_path() / "tokenizer_config.json").string();
}

TokenizerConfig parse_tokenizer_config(std::string_view text, const std::string& source) {
  TokenizerConfig c;
  if (text.empty()) return c;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(source, ": malformed JSON: ", e.what()));
  }
  if (!j.is_object()) throw Error(cat(source, ": not a JSON object"));
  try {
    c.bos_token = token_text(j, "bos_token");
    c.eos_token = token_text(j, "eos_token");
    if (j.contains("add_bos_token") && j["add_bos_token"].is_boolean()) c.add_bos_token = j["add_bos_token"].get<bool>();
    if (j.contains("add_eos_token") && j["add_eos_token"].is_boolean()) c.add_eos_token = j["add_eos_token"].get<bool>();
    if (j.contains("chat_template") && !j["chat_template"].is_null()) {
      const auto& t = j["chat_template"];
      auto named = [](const nlohmann::json& n) {  // {"name": "default", "template": "..."}
        return n.is_object() && n.contains("name") && n["name"].is_string() && n.contains("template") &&
               n["template"].is_string();
      };
      if (t.is_string()) {
        c.chat_template = t.get<std::string>();
      } else if (t.is_array() && std::all_of(t.begin(), t.end(), named)) {
        for (const auto& n : t)
          if (n["name"] == "default") c.chat_template = n["template"].get<std::string>();
      } else {
        throw Error(R"(chat_template is neither a string nor a list of {"name": ..., "template": ...})");
      }
    }
  } catch (const Error& e) {
    throw Error(cat(source, ": ", e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(source, ": ", e.what()));
  }
  return c;
}

}  // namespace llmbench::tok
