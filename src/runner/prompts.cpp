#include "llmbench/runner/prompts.h"

#include <random>

#include "llmbench/base/error.h"

namespace llmbench {

PromptIds synthetic_prompts(const PromptSpec& spec) {
  const std::int64_t lo = 3;
  const std::int64_t hi = std::max<std::int64_t>(lo + 1, static_cast<std::int64_t>(spec.vocab_size * 0.95));
  std::mt19937_64 rng(spec.seed);
  PromptIds p;
  p.source = "synthetic";
  p.rows.assign(spec.batch, std::vector<std::int64_t>(spec.prompt_len));
  for (auto& row : p.rows)
    for (auto& id : row) id = lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo));
  return p;
}

std::vector<TokenId> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& text, const std::string& format) {
  if (format == "none") return tokenizer.encode(text, false);
  const ChatFormat f = format.empty() ? ChatFormat::none : parse_chat_format(format);
  tokenizer.warn_if_no_chat_format(f);
  return tokenizer.encode_chat({{"user", text}}, true, f);
}

PromptIds text_prompts(const PromptSpec& spec, const Tokenizer& tokenizer) {
  if (!spec.text || spec.text->empty()) throw UsageError("the prompt is empty");
  std::vector<TokenId> ids = spec.chat ? encode_chat_prompt(tokenizer, *spec.text, spec.chat_format)
                                       : tokenizer.encode(*spec.text, true);
  if (ids.empty()) throw UsageError("the prompt tokenizes to no tokens");
  const std::size_t want = static_cast<std::size_t>(spec.prompt_len);
  PromptIds p;
  std::vector<std::int64_t> row(ids.begin(), ids.end());
  if (row.size() == want) {
    p.source = "text-exact";
  } else if (row.size() > want) {
    p.source = "text-cut";
    row.resize(want);
  } else {
    // Repeat the text's ids after the first copy (a leading BOS is not repeated).
    p.source = "text-repeated";
    const std::size_t start = (tokenizer.bos_id() && ids.front() == *tokenizer.bos_id() && ids.size() > 1) ? 1 : 0;
    std::vector<std::int64_t> body(row.begin() + start, row.end());
    while (row.size() < want) row.push_back(body[(row.size() - start) % body.size()]);
  }
  for (auto id : row)
    if (id >= spec.vocab_size) throw UsageError(cat("token id ", id, " from the tokenizer is outside the model's vocabulary (", spec.vocab_size, ")"));
  p.rows.assign(spec.batch, row);
  return p;
}

}  // namespace llmbench
