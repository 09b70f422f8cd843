#include "llmbench/tokenizer/stream_decoder.h"

#include <algorithm>
#include <utility>

#include "byte_level.h"
#include "llmbench/base/utf8.h"

namespace llmbench {

std::string StreamDecoder::push(TokenId id) {
  // An id that is nothing even twice over (a skipped special token, an id outside the vocabulary; not a
  // lone "▁", which only the first-token rule hides) never reaches the decoders: it is left out. Kept, a run
  // of them (EOS repeated under ignore_eos) made each push decode the whole run again (quadratic).
  if (tokenizer_.decode_bytes({id, id}, skip_special_).empty()) return {};
  ids_.push_back(id);
  // Decode the window with and without the unread ids: the difference is the new text, and decoder
  // rules that only touch the first token (leading-space strip) cancel out.
  std::vector<TokenId> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
  std::string before = tokenizer_.decode_bytes(window, skip_special_);
  window.assign(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
  std::string after = tokenizer_.decode_bytes(window, skip_special_);
  if (after.size() <= before.size() || after.compare(0, before.size(), before) != 0) return {};
  const std::string_view fresh = std::string_view(after).substr(before.size());
  // Everything up to an unfinished code point at the end goes now (malformed bytes as U+FFFD); the
  // unfinished tail waits for the next ids. A split there never cuts a U+FFFD's maximal subpart: the
  // tail starts with a lead byte.
  const std::size_t complete = utf8::complete_prefix(fresh);
  std::string out = complete > sent_ ? tok::utf8_lossy(fresh.substr(sent_, complete - sent_)) : std::string();
  if (complete == fresh.size()) {
    prefix_ = read_;
    read_ = ids_.size();
    sent_ = 0;
  } else {
    sent_ = std::max(sent_, complete);
  }
  return out;
}

std::string StreamDecoder::finish() {
  std::vector<TokenId> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
  std::string before = tokenizer_.decode_bytes(window, skip_special_);
  window.assign(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
  std::string after = tokenizer_.decode_bytes(window, skip_special_);
  prefix_ = read_ = ids_.size();
  const std::size_t sent = std::exchange(sent_, 0);
  if (after.size() <= before.size() + sent || after.compare(0, before.size(), before) != 0) return {};
  return tok::utf8_lossy(std::string_view(after).substr(before.size() + sent));
}

}  // namespace llmbench
