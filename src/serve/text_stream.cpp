#include "llmbench/serve/text_stream.h"

#include <algorithm>

namespace llmbench::serve {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : decoder_(tokenizer, /*skip_special=*/true), stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

std::string TextStream::push(TokenId id) {
  if (stopped_) return {};
  pending_ += decoder_.push(id);
  return release(false);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  pending_ += decoder_.finish();
  return release(true);
}

std::string TextStream::release(bool at_end) {
  std::size_t match = std::string::npos;
  for (const auto& s : stop_) match = std::min(match, pending_.find(s));
  std::string out;
  if (match != std::string::npos) {
    stopped_ = true;
    out = pending_.substr(0, match);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail of pending_ that a stop string starts with.
  std::size_t hold = 0;
  if (!at_end)
    for (const auto& s : stop_)
      for (std::size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n)
        if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
          hold = n;
          break;
        }
  out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

}  // namespace llmbench::serve
