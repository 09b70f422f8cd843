#include "llmbench/base/utf8.h"

namespace llmbench::utf8 {

int sequence_length(std::string_view text, std::size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  unsigned char c = s[i];
  if (c < 0x80) return 1;
  int len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;         // no overlongs
    if (c == 0xED) hi = 0x9F;         // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;         // no overlongs
    if (c == 0xF4) hi = 0x8F;         // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= n) return -1;
    unsigned char b = s[i + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

std::size_t first_invalid(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    int len = sequence_length(text, i);
    if (len <= 0) return i;
    i += static_cast<std::size_t>(len);
  }
  return text.size();
}

std::size_t complete_prefix(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    int len = sequence_length(text, i);
    if (len < 0) return i;   // incomplete tail: hold it back
    i += len == 0 ? 1 : static_cast<std::size_t>(len);  // malformed bytes pass through
  }
  return text.size();
}

std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a code point
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace llmbench::utf8
