#include "added_vocab.h"

#include <utf8proc.h>

namespace llmbench::tok {
namespace {

char32_t decode_at(std::string_view s, std::size_t i, std::size_t* len) {
  utf8proc_int32_t cp = -1;
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
  *len = n > 0 ? std::size_t(n) : 1;
  return cp < 0 ? 0 : char32_t(cp);
}

// Start of the code point that ends at `end`.
std::size_t previous_start(std::string_view s, std::size_t end) {
  std::size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

// Rust's char::is_whitespace (Unicode White_Space).
bool is_whitespace(char32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Rust's char::is_alphanumeric (Alphabetic or Numeric; letters and numbers approximate it).
bool is_alphanumeric(char32_t c) {
  auto cat = utf8proc_category(utf8proc_int32_t(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) || (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

}  // namespace

void AddedTokenMatcher::add(const AddedToken& token) {
  if (token.content.empty()) return;
  int node = 0;
  for (unsigned char c : token.content) {
    int child = -1;
    for (auto& [byte, idx] : nodes_[node].next)
      if (byte == c) child = idx;
    if (child < 0) {
      child = int(nodes_.size());
      nodes_[node].next.emplace_back(c, child);
      nodes_.emplace_back();
    }
    node = child;
  }
  if (nodes_[node].token < 0) {  // the first definition of a content wins
    nodes_[node].token = int(tokens_.size());
    tokens_.push_back(token);
  }
  first_byte_[static_cast<unsigned char>(token.content[0])] = true;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  out.clear();
  std::size_t gap_start = 0;  // end of the previous match
  std::size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    int node = 0, found = -1;
    std::size_t found_end = 0;
    for (std::size_t k = i; k < text.size(); ++k) {
      int child = -1;
      for (auto& [byte, idx] : nodes_[node].next)
        if (byte == static_cast<unsigned char>(text[k])) child = idx;
      if (child < 0) break;
      node = child;
      if (nodes_[node].token >= 0) {
        found = nodes_[node].token;
        found_end = k + 1;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    const AddedToken& t = tokens_[found];
    std::size_t start = i, stop = found_end;
    if (t.single_word) {
      std::size_t len;
      bool start_ok = start == 0 || !is_alphanumeric(decode_at(text, previous_start(text, start), &len));
      bool stop_ok = stop == text.size() || !is_alphanumeric(decode_at(text, stop, &len));
      if (!start_ok || !stop_ok) {
        i = found_end;
        continue;
      }
    }
    if (t.lstrip) {
      while (start > gap_start) {
        std::size_t p = previous_start(text, start), len;
        if (!is_whitespace(decode_at(text, p, &len))) break;
        start = p;
      }
    }
    if (t.rstrip) {
      std::size_t len;
      while (stop < text.size() && is_whitespace(decode_at(text, stop, &len))) stop += len;
    }
    if (start > gap_start) out.push_back({gap_start, start, -1});
    out.push_back({start, stop, t.id});
    gap_start = i = stop;
  }
  if (gap_start < text.size()) out.push_back({gap_start, text.size(), -1});
}

}  // namespace llmbench::tok
