#include "llmbench/base/error.h"

#include "llmbench/base/utf8.h"

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

std::string one_line(const std::string& message) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < message.size();) {
    const unsigned char c = static_cast<unsigned char>(message[i]);
    const int n = utf8::sequence_length(message, i);  // a cut-off sequence (-1) is shown as bytes
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((c < 0x20 && c != '\t') || n <= 0) {  // a control character, or a byte that is not UTF-8
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out.append(message, i, static_cast<std::size_t>(n));
      i += static_cast<std::size_t>(n);
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace llmbench
