#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/tokenizer.h"
#include "llmbench/base/utf8.h"

namespace llmbench::tok {

// Ids past this are no real vocabulary (the largest are ~262k) and would make the id tables huge.
constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 24) - 1;

// `j` as JSON for an error message: about 120 characters at most, nothing nested deeper than 3 levels
// (dump() recurses once per level: a value nested 200 000 deep overflowed the stack).
inline std::string brief_json(const nlohmann::json& j, int depth = 0) {
  std::string out;
  if (!j.is_structured()) {
    out = j.dump();
  } else if (depth == 3) {
    out = j.is_array() ? "[...]" : "{...}";
  } else {
    out = j.is_array() ? "[" : "{";
    for (auto it = j.begin(); it != j.end() && out.size() < 120; ++it) {
      if (out.size() > 1) out += ", ";
      if (j.is_object()) out += nlohmann::json(it.key()).dump() + ": ";
      out += brief_json(*it, depth + 1);
    }
    out += j.is_array() ? "]" : "}";
  }
  return out.size() <= 120 ? out : utf8::shortened(out, 117);
}

// A token id from tokenizer.json: an integer in [0, kMaxTokenId], else Error naming `what`.
inline TokenId json_token_id(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t(kMaxTokenId)
                             : !v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxTokenId)
    throw Error(cat(what, ": expected a token id (an integer in [0, ", kMaxTokenId, "]), got ", brief_json(v)));
  return static_cast<TokenId>(v.get<std::int64_t>());
}

}  // namespace llmbench::tok
