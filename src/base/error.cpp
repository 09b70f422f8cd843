#include "llmbench/base/error.h"

#include <cstdint>

namespace llmbench {

std::string shown(double v) {
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

std::string first_line(const std::string& message) {
  auto end = message.find('\n');
  std::string line = end == std::string::npos ? message : message.substr(0, end);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

namespace {

// Bytes of the well-formed UTF-8 sequence at s[i] (no overlong form, surrogate or code point past U+10FFFF),
// or 0.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t cp = 0, min = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

}  // namespace

std::string one_line(const std::string& message) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < message.size();) {
    const unsigned char c = static_cast<unsigned char>(message[i]);
    const std::size_t n = utf8_sequence(message, i);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((c < 0x20 && c != '\t') || n == 0) {  // a control character, or a byte that is not UTF-8
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out.append(message, i, n);
      i += n;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace llmbench
