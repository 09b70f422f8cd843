#include "llmbench/base/error.h"

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
  std::string out;
  for (unsigned char c : message) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 && c != '\t') {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace llmbench
