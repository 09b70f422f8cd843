#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmbench::tok {

// A PCRE2 regex in UTF + UCP mode, JIT-compiled (Split pre-tokenizers, Replace patterns).
class Regex {
 public:
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // [begin, end) byte ranges of the non-overlapping matches, left to right (text must be valid UTF-8).
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench::tok
