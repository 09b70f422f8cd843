#include "llmbench/tokenizer/bench_text.h"

#include <cstdint>

namespace llmbench {

std::string bench_text(const std::vector<std::string>& corpus, std::size_t size) {
  std::uint64_t x = 0x853C49E6748FEA9Bull;
  auto rnd = [&x](std::uint64_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % n;
  };
  static const char* const kSyllables[] = {"ka", "lo", "mi", "ter", "an", "the", "ing", "ion", "str", "pre", "qu", "zz",
                                           "The", "An", "é", "ü", "中", "文", "語", "ß", "ph", "ou", "😀", "Ω"};
  static const char* const kPunct[] = {", ", ". ", "!\n", "\n\n", "; ", " (", ") ", "\t", "'s ", "\r\n", "? ", "    "};
  std::string out;
  out.reserve(size + 4096);
  while (out.size() < size) {
    std::uint64_t k = rnd(10);
    if (k < 2) {
      out += corpus.empty() ? std::string() : corpus[rnd(corpus.size())];
      out += ' ';
    } else if (k < 8) {
      std::uint64_t n = 1 + rnd(4);
      for (std::uint64_t i = 0; i < n; ++i) out += kSyllables[rnd(std::size(kSyllables))];
      out += ' ';
    } else if (k == 8) {
      std::uint64_t n = 1 + rnd(8);
      for (std::uint64_t i = 0; i < n; ++i) out += char('0' + rnd(10));
      out += ' ';
    } else {
      out += kPunct[rnd(std::size(kPunct))];
    }
  }
  return out;
}

}  // namespace llmbench
