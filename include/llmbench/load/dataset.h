#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace llmbench {

class Tokenizer;

// One request's prompt and how many tokens to ask for.
struct PromptSpec {
  std::string text;
  int prompt_tokens = 0;  // by the tokenizer (without special tokens); 0 when unknown
  int output_len = 0;     // max_tokens (and min_tokens) of the request
};

// `synthetic`, `sharegpt:FILE` or `jsonl:FILE`.
struct DatasetSpec {
  std::string kind = "synthetic";
  std::string path;
};
DatasetSpec parse_dataset(const std::string& text);  // UsageError on anything else

// `n` prompts of exactly `input_len` tokens of `tokenizer` (without special tokens): random ids
// decoded to text, re-encoded, and adjusted until the count is exact. Throws Error if it cannot.
// Returns fewer as soon as `should_stop` (polled per prompt) says so. With `range_ratio` R > 0 each
// prompt's input and output lengths are drawn uniformly from the integers in [L·(1−R), L·(1+R)]
// (truncated, at least 1; vLLM's --random-range-ratio), from their own stream of `seed`. With
// `prefix_len` P > 0 every prompt starts with the same text of exactly P tokens (one per seed) and has
// P + input length tokens in all (vLLM's --random-prefix-len): prefix caches hit. R = 0 and P = 0 give
// exactly the prompts they always gave.
std::vector<PromptSpec> synthetic_prompts(const Tokenizer& tokenizer, int n, int input_len, int output_len,
                                          std::uint64_t seed, const std::function<bool()>& should_stop = {},
                                          double range_ratio = 0, int prefix_len = 0);

// The integers [lo, hi] a length L spreads over with range ratio R (both L when R = 0).
std::pair<int, int> length_range(int length, double range_ratio);

// ShareGPT JSON: [{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}, ...].
// The first human turn is the prompt; output_len is the next turn's length in tokens, or
// `output_len` when > 0. Entries without two turns are skipped; UsageError on unreadable or invalid files.
std::vector<PromptSpec> load_sharegpt(const std::string& path, const Tokenizer& tokenizer, int output_len);

// JSON lines: {"prompt": "...", "output_len": 128} per line (output_len optional when `output_len` > 0,
// which then overrides it; else an integer in [1, kMaxJsonlOutputLen]). Blank lines skipped; UsageError
// naming FILE:LINE on a bad line (invalid UTF-8 is said as such).
constexpr int kMaxJsonlOutputLen = 1 << 24;
std::vector<PromptSpec> load_jsonl(const std::string& path, const Tokenizer& tokenizer, int output_len);

}  // namespace llmbench
