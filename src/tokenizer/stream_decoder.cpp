#include "llmbench/tokenizer/stream_decoder.h"

#include "byte_level.h"
#include "llmbench/tokenizer/utf8.h"

namespace llmbench {

std::string StreamDecoder::push(TokenId id) {
  ids_.push_back(id);
  // Decode the window with and without the unread ids: the difference is the new text, and decoder
  // rules that only touch the first token (leading-space strip) cancel out.
  std::vector<TokenId> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
  std::string before = tokenizer_.decode_bytes(window, skip_special_);
  window.assign(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
  std::string after = tokenizer_.decode_bytes(window, skip_special_);
  if (after.size() <= before.size() || after.compare(0, before.size(), before) != 0) return {};
  std::string fresh = after.substr(before.size());
  if (utf8::complete_prefix(fresh) != fresh.size()) return {};  // an unfinished code point: wait
  prefix_ = read_;
  read_ = ids_.size();
  return tok::utf8_lossy(fresh);
}

std::string StreamDecoder::finish() {
  std::vector<TokenId> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.begin() + std::ptrdiff_t(read_));
  std::string before = tokenizer_.decode_bytes(window, skip_special_);
  window.assign(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
  std::string after = tokenizer_.decode_bytes(window, skip_special_);
  prefix_ = read_ = ids_.size();
  if (after.size() <= before.size() || after.compare(0, before.size(), before) != 0) return {};
  return tok::utf8_lossy(after.substr(before.size()));
}

}  // namespace llmbench
