#include "bpe.h"

#include <queue>

#include "byte_level.h"
#include "json_ids.h"
#include "llmbench/base/error.h"

namespace llmbench::tok {

namespace {
constexpr std::size_t kCacheMaxWordBytes = 64;
constexpr std::size_t kCacheMaxEntries = 1 << 18;
constexpr std::size_t kSmallWord = 24;  // below this many symbols the quadratic scan beats a heap
}  // namespace

void MergeMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{kEmpty, {0, 0}});
  mask_ = cap - 1;
}

void MergeMap::insert(TokenId a, TokenId b, Value v) {
  std::uint64_t key = pack(a, b);
  for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;  // a repeated merge keeps its first (lowest) rank, as HF does
    if (s.key == kEmpty) {
      s = Slot{key, v};
      return;
    }
  }
}

BpeModel::BpeModel(const nlohmann::json& model, bool byte_level) : byte_level_(byte_level) {
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
    throw Error("BPE dropout is not supported");
  auto string_or_empty = [&](const char* key) {
    return model.contains(key) && model[key].is_string() ? model[key].get<std::string>() : std::string();
  };
  if (!string_or_empty("continuing_subword_prefix").empty())
    throw Error("BPE continuing_subword_prefix is not supported");
  if (!string_or_empty("end_of_word_suffix").empty()) throw Error("BPE end_of_word_suffix is not supported");
  byte_fallback_ = model.value("byte_fallback", false);
  ignore_merges_ = model.value("ignore_merges", false);
  fuse_unk_ = model.value("fuse_unk", false);

  const auto& vocab = model.at("vocab");
  if (!vocab.is_object()) throw Error("model.vocab is not an object");
  TokenId max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) max_id = std::max(max_id, json_token_id(it.value(), "model.vocab[\"" + it.key() + "\"]"));
  id_to_token_.assign(std::size_t(max_id + 1), std::string());
  has_id_.assign(std::size_t(max_id + 1), false);
  vocab_.reserve(vocab.size() * 2);
  const ByteLevelTable& table = byte_level_table();
  std::string raw;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const TokenId id = json_token_id(it.value(), "model.vocab[\"" + it.key() + "\"]");
    id_to_token_[id] = it.key();
    has_id_[id] = true;
    raw.clear();
    if (byte_level_ && !table.decode(it.key(), raw)) continue;  // unreachable from byte-level input
    keys_.push_back(byte_level_ ? raw : it.key());
    vocab_.emplace(keys_.back(), id);
  }
  vocab_size_ = vocab.size();
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto id = id_of(model["unk_token"].get<std::string>());
    if (!id) throw Error(cat("unk_token '", model["unk_token"].get<std::string>(), "' is not in the vocab"));
    unk_ = *id;
  }
  for (int b = 0; b < 256; ++b) {
    std::optional<TokenId> id;
    if (byte_level_) {
      id = id_of(std::string(1, char(b)));
    } else if (byte_fallback_) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      id = id_of(name);
    }
    byte_ids_[b] = id ? *id : -1;
  }

  const auto& merges = model.at("merges");
  if (!merges.is_array()) throw Error("model.merges is not an array");
  merges_.reserve(merges.size());
  std::unordered_map<std::string_view, TokenId> original;  // merges name tokens as the file writes them
  original.reserve(vocab.size() * 2);
  for (std::size_t id = 0; id < id_to_token_.size(); ++id)
    if (has_id_[id]) original.emplace(id_to_token_[id], TokenId(id));
  std::string a, b;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    if (m.is_string()) {  // "a b"
      const std::string& s = m.get_ref<const std::string&>();
      auto space = s.find(' ');
      if (space == std::string::npos) throw Error(cat("merge ", rank, " '", s, "' is not two tokens"));
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      throw Error(cat("merge ", rank, " is neither \"a b\" nor [\"a\", \"b\"]"));
    }
    auto find_original = [&](const std::string& t) -> TokenId {
      auto it = original.find(t);
      if (it == original.end()) throw Error(cat("merge ", rank, " uses '", t, "', which is not in the vocab"));
      return it->second;
    };
    TokenId ia = find_original(a), ib = find_original(b), im = find_original(a + b);
    merges_.insert(ia, ib, {std::uint32_t(rank), im});
  }
}

bool BpeModel::never_merges_across(std::string_view mark) const {
  for (const std::string& key : keys_)
    for (std::size_t p = key.find(mark, 1); p != std::string::npos; p = key.find(mark, p + 1))
      if (p < mark.size() || key.compare(p - mark.size(), mark.size(), mark) != 0) return false;
  return true;
}

std::optional<TokenId> BpeModel::id_of(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>& syms) const {
  syms.clear();
  if (byte_level_) {
    for (unsigned char c : word) {
      if (byte_ids_[c] >= 0) syms.push_back(byte_ids_[c]);
      else if (unk_ && !(fuse_unk_ && !syms.empty() && syms.back() == *unk_)) syms.push_back(*unk_);
    }
    return;
  }
  std::size_t i = 0;
  while (i < word.size()) {
    auto c = static_cast<unsigned char>(word[i]);
    std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    len = std::min(len, word.size() - i);
    std::string_view ch = word.substr(i, len);
    i += len;
    auto it = vocab_.find(ch);
    if (it != vocab_.end()) {
      syms.push_back(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : ch) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : ch) syms.push_back(byte_ids_[b]);
        continue;
      }
    }
    if (unk_ && !(fuse_unk_ && !syms.empty() && syms.back() == *unk_)) syms.push_back(*unk_);
  }
}

void BpeModel::merge_small(std::vector<TokenId>& syms) const {
  while (syms.size() > 1) {
    std::uint32_t best_rank = ~0u;
    std::size_t best = 0;
    TokenId best_id = 0;
    for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
      const MergeMap::Value* v = merges_.find(syms[i], syms[i + 1]);
      if (v && v->rank < best_rank) {
        best_rank = v->rank;
        best = i;
        best_id = v->id;
      }
    }
    if (best_rank == ~0u) return;
    syms[best] = best_id;
    syms.erase(syms.begin() + std::ptrdiff_t(best) + 1);
  }
}

void BpeModel::merge_large(std::vector<TokenId>& syms) const {
  // Doubly linked symbols and a heap of candidate merges ordered by (rank, position), as HF does.
  const int n = int(syms.size());
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Cand { std::uint32_t rank; int pos; TokenId id; };
  auto later = [](const Cand& x, const Cand& y) { return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos; };
  std::priority_queue<Cand, std::vector<Cand>, decltype(later)> heap(later);
  auto push = [&](int i) {
    if (i < 0 || next[i] < 0) return;
    if (const auto* v = merges_.find(syms[i], syms[next[i]])) heap.push({v->rank, i, v->id});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    if (dead[c.pos] || next[c.pos] < 0) continue;
    const auto* v = merges_.find(syms[c.pos], syms[next[c.pos]]);
    if (!v || v->rank != c.rank || v->id != c.id) continue;  // stale: a neighbour changed
    int right = next[c.pos];
    syms[c.pos] = c.id;
    dead[right] = true;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  std::size_t k = 0;
  for (int i = 0; i >= 0 && i < n; i = next[i]) syms[k++] = syms[i];
  syms.resize(k);
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), cache_ids_.begin() + it->second.first,
                 cache_ids_.begin() + it->second.first + it->second.second);
      return;
    }
  }
  thread_local std::vector<TokenId> syms;
  initial_symbols(word, syms);
  if (syms.size() <= kSmallWord) merge_small(syms);
  else merge_large(syms);
  out.insert(out.end(), syms.begin(), syms.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheMaxEntries && !cache_.count(word)) {
      cache_keys_.emplace_back(word);
      cache_.emplace(cache_keys_.back(), std::make_pair(std::uint32_t(cache_ids_.size()), std::uint32_t(syms.size())));
      cache_ids_.insert(cache_ids_.end(), syms.begin(), syms.end());
    }
  }
}

}  // namespace llmbench::tok
