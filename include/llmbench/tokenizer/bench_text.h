#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace llmbench {

// At least `size` bytes of mixed text (corpus strings, made-up words in several scripts, numbers,
// punctuation), deterministic; scripts/reference/make_tokenizer_fixtures.py makes the same bytes.
std::string bench_text(const std::vector<std::string>& corpus, std::size_t size = std::size_t{1} << 20);

}  // namespace llmbench
