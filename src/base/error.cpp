#include "llmbench/base/error.h"

namespace llmbench {

std::string first_line(const std::string& message) {
  auto end = message.find('\n');
  std::string line = end == std::string::npos ? message : message.substr(0, end);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace llmbench
