#include "byte_level.h"

#include <utf8proc.h>

#include "llmbench/base/utf8.h"

namespace llmbench::tok {

void append_utf8(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

ByteLevelTable::ByteLevelTable() {
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    append_utf8(byte_to_char[b], printable ? char32_t(b) : char32_t(256 + extra++));
  }
}

bool ByteLevelTable::decode(std::string_view token, std::string& out) const {
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(token.data());
  std::size_t i = 0;
  while (i < token.size()) {
    utf8proc_int32_t cp;
    auto n = utf8proc_iterate(s + i, static_cast<utf8proc_ssize_t>(token.size() - i), &cp);
    if (n <= 0) return false;
    i += static_cast<std::size_t>(n);
    if (cp >= 0x21 && cp <= 0x7E) out.push_back(static_cast<char>(cp));
    else if ((cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) out.push_back(static_cast<char>(cp));
    else if (cp >= 256 && cp < 256 + 68) {
      // The 68 remapped bytes, in byte order: 0x00-0x20, 0x7F-0xA0, 0xAD.
      int k = cp - 256;
      int b = k <= 0x20 ? k : (k <= 0x20 + 34 ? 0x7F + (k - 0x21) : 0xAD);
      out.push_back(static_cast<char>(b));
    } else {
      return false;
    }
  }
  return true;
}

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t bad = utf8::first_invalid(bytes.substr(i));
    out.append(bytes.data() + i, bad);
    i += bad;
    if (i >= bytes.size()) break;
    // Skip the maximal prefix of a well-formed sequence (at least one byte), emit one U+FFFD.
    auto c = static_cast<unsigned char>(bytes[i]);
    int len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    std::size_t k = 1;
    for (; static_cast<int>(k) < len && i + k < bytes.size(); ++k) {
      auto b = static_cast<unsigned char>(bytes[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    }
    out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

}  // namespace llmbench::tok
