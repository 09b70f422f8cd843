#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::tok {

// Open-addressing map from a pair of ids to (merge rank, merged id): the BPE inner loop's only lookup.
class MergeMap {
 public:
  struct Value { std::uint32_t rank; TokenId id; };
  void reserve(std::size_t n);
  void insert(TokenId a, TokenId b, Value v);
  const Value* find(TokenId a, TokenId b) const {
    std::uint64_t key = pack(a, b);
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  struct Slot { std::uint64_t key; Value value; };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static std::uint64_t pack(TokenId a, TokenId b) {
    return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
  }
  static std::size_t hash(std::uint64_t k) { return std::size_t((k * 0x9E3779B97F4A7C15ull) >> 20); }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

// The BPE model of a tokenizer.json: vocab, merges, byte_fallback, unk, ignore_merges, a word cache.
class BpeModel {
 public:
  // `byte_level`: the pre-tokenizer maps bytes to GPT-2 characters, so the vocab is keyed by the raw
  // bytes instead and words are split into bytes (the same result without mapping every word).
  BpeModel(const nlohmann::json& model, bool byte_level);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  // The vocab's string for an id (as written in the file), nullptr when the id is not in it.
  const std::string* token(TokenId id) const {
    return id >= 0 && std::size_t(id) < id_to_token_.size() && has_id_[id] ? &id_to_token_[id] : nullptr;
  }
  std::optional<TokenId> id_of(std::string_view token) const;
  std::size_t size() const { return vocab_size_; }
  // True when no token holds `mark` right after something else: then no merge crosses the point
  // before such a mark, and a long word can be encoded in pieces split there (same ids, cacheable).
  bool never_merges_across(std::string_view mark) const;
  TokenId max_id() const { return TokenId(id_to_token_.size()) - 1; }

 private:
  void initial_symbols(std::string_view word, std::vector<TokenId>& syms) const;
  void merge_small(std::vector<TokenId>& syms) const;
  void merge_large(std::vector<TokenId>& syms) const;

  bool byte_level_;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  std::optional<TokenId> unk_;
  std::size_t vocab_size_ = 0;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::deque<std::string> keys_;                       // storage of the encode-side keys (raw bytes)
  std::unordered_map<std::string_view, TokenId> vocab_;  // encode-side key → id
  TokenId byte_ids_[256];                              // byte_level: id of each single byte; byte_fallback: <0xNN>
  MergeMap merges_;

  // Cache of word → ids; mutex-guarded so encode stays const and thread-safe.
  mutable std::mutex cache_mutex_;
  mutable std::deque<std::string> cache_keys_;
  mutable std::unordered_map<std::string_view, std::pair<std::uint32_t, std::uint32_t>> cache_;
  mutable std::vector<TokenId> cache_ids_;
};

}  // namespace llmbench::tok
