#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::tok {

// Ids past this are no real vocabulary (the largest are ~262k) and would make the id tables huge.
constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 24) - 1;

// A token id from tokenizer.json: an integer in [0, kMaxTokenId], else Error naming `what`.
inline TokenId json_token_id(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t(kMaxTokenId)
                             : !v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxTokenId)
    throw Error(cat(what, ": expected a token id (an integer in [0, ", kMaxTokenId, "]), got ", v.dump()));
  return static_cast<TokenId>(v.get<std::int64_t>());
}

}  // namespace llmbench::tok
