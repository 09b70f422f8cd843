#pragma once
#include <array>
#include <string>
#include <string_view>

namespace llmbench::tok {

// GPT-2's byte ↔ printable-character table (ByteLevel pre-tokenizer and decoder).
struct ByteLevelTable {
  std::array<std::string, 256> byte_to_char;  // UTF-8 of the character standing for each byte
  ByteLevelTable();
  // The bytes `token` stands for; false when a character is not in the table.
  bool decode(std::string_view token, std::string& out) const;
};
const ByteLevelTable& byte_level_table();

// UTF-8 → text with each maximal invalid subsequence replaced by U+FFFD (Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

// Appends the UTF-8 of code point `cp`.
void append_utf8(std::string& out, char32_t cp);

}  // namespace llmbench::tok
