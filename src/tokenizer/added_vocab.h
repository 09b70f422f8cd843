#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::tok {

// One entry of tokenizer.json's added_tokens.
struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// A span of the input: either an added token's id, or text for the normal pipeline.
struct Segment {
  std::size_t begin, end;
  TokenId id;  // -1: text
};

// Finds added tokens in text the way HF's AddedVocabulary does: leftmost-longest matches, then the
// single_word / lstrip / rstrip rules.
class AddedTokenMatcher {
 public:
  void add(const AddedToken& token);  // token.content as it should be matched
  bool empty() const { return tokens_.empty(); }
  // Splits text into segments (text gaps that are empty are left out).
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int>> next;
    int token = -1;
  };
  std::vector<Node> nodes_{1};
  std::vector<AddedToken> tokens_;
  bool first_byte_[256] = {};
};

}  // namespace llmbench::tok
