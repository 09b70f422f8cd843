#pragma once
#include <string>
#include <vector>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

// Incremental detokenizer: push ids as they are generated; each push returns the new text, never a
// partial UTF-8 sequence (the bytes of an unfinished code point at the end wait for the next ids;
// malformed bytes before them go at once, as U+FFFD). The pieces
// concatenated equal tokenizer.decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}

  std::string push(TokenId id);
  // Whatever is still held back (an unfinished sequence at the end of the output, as U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<TokenId> ids_;
  std::size_t prefix_ = 0;  // first id of the window decoded together (keeps first-token rules out)
  std::size_t read_ = 0;    // ids before this one have been emitted
  std::size_t sent_ = 0;    // bytes of the unread ids' text emitted already (all but an unfinished tail)
};

}  // namespace llmbench
