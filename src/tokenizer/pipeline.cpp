#include "pipeline.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "byte_level.h"
#include "json_ids.h"
#include "llmbench/base/error.h"
#include "regex.h"

namespace llmbench::tok {
namespace {

using json = nlohmann::json;
using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

std::string type_of(const json& j, const char* what) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error(cat(what, " has no \"type\": ", brief_json(j)));
  return j["type"].get<std::string>();
}

// A {"String": s} or {"Regex": r} pattern: finds its non-overlapping matches.
class Pattern {
 public:
  explicit Pattern(const json& j) {
    if (j.contains("String")) literal_ = j["String"].get<std::string>();
    else if (j.contains("Regex")) regex_ = std::make_unique<Regex>(j["Regex"].get<std::string>());
    else throw Error(cat("pattern is neither String nor Regex: ", brief_json(j)));
  }
  void find_all(std::string_view text, Ranges& out) const {
    if (regex_) return regex_->find_all(text, out);
    out.clear();
    if (literal_.empty()) return;
    for (std::size_t p = text.find(literal_); p != std::string_view::npos; p = text.find(literal_, p + literal_.size()))
      out.emplace_back(p, p + literal_.size());
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

std::string replace_all(std::string_view text, const Pattern& pattern, const std::string& content) {
  thread_local Ranges ranges;
  pattern.find_all(text, ranges);
  if (ranges.empty()) return std::string(text);
  std::string out;
  std::size_t prev = 0;
  for (auto [b, e] : ranges) {
    out.append(text.substr(prev, b - prev));
    out += content;
    prev = e;
  }
  out.append(text.substr(prev));
  return out;
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

// ---- normalizers

class UnicodeNormalizer : public Normalizer {
 public:
  UnicodeNormalizer(int options, bool ascii_stable) : options_(options), ascii_stable_(ascii_stable) {}
  void apply(std::string& text) const override {
    if (ascii_stable_ && is_ascii(text)) return;  // ASCII is already in every normal form
    if (!ascii_stable_) {
      text = map(text);
      return;
    }
    // An ASCII character never combines with what precedes it, so the text can be cut before each one:
    // only the stretches from the ASCII character before a non-ASCII run to the end of that run go
    // through utf8proc (the ASCII character may take combining marks, as in "e" + U+0301).
    std::string out;
    out.reserve(text.size() + 16);
    const std::size_t n = text.size();
    auto ascii = [&](std::size_t k) { return static_cast<unsigned char>(text[k]) < 0x80; };
    std::size_t i = 0;
    while (i < n) {
      std::size_t j = i;
      while (j < n && ascii(j)) ++j;
      if (j == n) {
        out.append(text, i, n - i);
        break;
      }
      std::size_t start = j > i ? j - 1 : j;
      out.append(text, i, start - i);
      std::size_t k = j;
      while (k < n && !ascii(k)) ++k;
      out += map(std::string_view(text).substr(start, k - start));
      i = k;
    }
    text = std::move(out);
  }

 private:
  // utf8proc_map, except for the canonical ordering: utf8proc sorts each run of combining marks with an
  // exchange sort, quadratic in the run (200 000 marks of two classes took 73 s). Here the text is
  // decomposed, each run is stable-sorted by combining class (the same order), then composed and encoded.
  std::string map(std::string_view s) const {
    const auto options = utf8proc_option_t(options_);
    std::vector<utf8proc_int32_t> cps(s.size() + 4);
    std::size_t n = 0;
    utf8proc_int32_t cp;
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    for (std::size_t i = 0; i < s.size();) {
      auto len = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
      if (len <= 0) throw Error(cat("unicode normalisation failed: ", utf8proc_errmsg(len)));
      i += std::size_t(len);
      utf8proc_ssize_t m;
      while ((m = utf8proc_decompose_char(cp, cps.data() + n, utf8proc_ssize_t(cps.size() - n), options, &boundclass)) >
             utf8proc_ssize_t(cps.size() - n))
        cps.resize(cps.size() * 2 + std::size_t(m));
      if (m < 0) throw Error(cat("unicode normalisation failed: ", utf8proc_errmsg(m)));
      n += std::size_t(m);
    }
    auto ccc = [](utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; };
    for (std::size_t b = 0, e; b < n; b = e + 1) {
      for (e = b; e < n && ccc(cps[e]) != 0;) ++e;
      auto by_class = [&](utf8proc_int32_t x, utf8proc_int32_t y) { return ccc(x) < ccc(y); };
      if (!std::is_sorted(cps.begin() + std::ptrdiff_t(b), cps.begin() + std::ptrdiff_t(e), by_class))
        std::stable_sort(cps.begin() + std::ptrdiff_t(b), cps.begin() + std::ptrdiff_t(e), by_class);
    }
    cps.resize(n + 1);  // reencode writes up to 4 bytes per code point and then a NUL byte
    auto bytes = utf8proc_reencode(cps.data(), utf8proc_ssize_t(n), options);  // composes, then UTF-8 in place
    if (bytes < 0) throw Error(cat("unicode normalisation failed: ", utf8proc_errmsg(bytes)));
    return std::string(reinterpret_cast<const char*>(cps.data()), std::size_t(bytes));
  }

  int options_;
  bool ascii_stable_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void apply(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
      utf8proc_int32_t cp;
      auto n = utf8proc_iterate(s + i, utf8proc_ssize_t(text.size() - i), &cp);
      i += std::size_t(n);
      append_utf8(out, char32_t(utf8proc_tolower(cp)));
    }
    text = std::move(out);
  }
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void apply(std::string& text) const override {
    if (!text.empty()) text.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  explicit ReplaceNormalizer(const json& j) : pattern_(j.at("pattern")), content_(j.at("content").get<std::string>()) {}
  void apply(std::string& text) const override { text = replace_all(text, pattern_, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void apply(std::string& text) const override {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    std::size_t b = 0, e = text.size();
    if (left_) while (b < e && space(text[b])) ++b;
    if (right_) while (e > b && space(text[e - 1])) --e;
    text = text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void apply(std::string& text) const override {
    for (const auto& s : steps_) s->apply(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// ---- pre-tokenizers

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const std::string& b) {
  if (b == "Removed") return Behavior::removed;
  if (b == "Isolated") return Behavior::isolated;
  if (b == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (b == "MergedWithNext") return Behavior::merged_with_next;
  if (b == "Contiguous") return Behavior::contiguous;
  throw Error(cat("unsupported Split behavior '", b, "'"));
}

// Splits each piece at the pattern's matches with HF's split behaviours.
void split_pieces(std::vector<Piece>& pieces, const Pattern& pattern, Behavior behavior, bool invert) {
  thread_local Ranges matches;
  thread_local std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts, merged;
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (const Piece& piece : pieces) {
    pattern.find_all(piece.text, matches);
    parts.clear();
    std::size_t prev = 0;
    for (auto [b, e] : matches) {
      if (b > prev) parts.push_back({{prev, b}, invert});
      parts.push_back({{b, e}, !invert});
      prev = e;
    }
    if (prev < piece.text.size()) parts.push_back({{prev, piece.text.size()}, invert});
    merged.clear();
    bool previous_match = false;
    switch (behavior) {
      case Behavior::removed:
        for (auto& p : parts)
          if (!p.second) merged.push_back(p);
        break;
      case Behavior::isolated:
        merged = parts;
        break;
      case Behavior::merged_with_previous:
        for (auto& p : parts) {
          if (p.second && !previous_match && !merged.empty()) merged.back().first.second = p.first.second;
          else merged.push_back({p.first, false});
          previous_match = p.second;
        }
        break;
      case Behavior::merged_with_next:
        for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
          if (it->second && !previous_match && !merged.empty()) merged.back().first.first = it->first.first;
          else merged.push_back({it->first, false});
          previous_match = it->second;
        }
        std::reverse(merged.begin(), merged.end());
        break;
      case Behavior::contiguous:
        for (std::size_t k = 0; k < parts.size(); ++k) {
          if (k > 0 && parts[k].second == previous_match) merged.back().first.second = parts[k].first.second;
          else merged.push_back(parts[k]);
          previous_match = parts[k].second;
        }
        break;
    }
    for (auto& m : merged)
      if (m.first.second > m.first.first)
        out.push_back({piece.text.substr(m.first.first, m.first.second - m.first.first),
                       piece.at_start && m.first.first == 0});
  }
  pieces = std::move(out);
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const json& j)
      : pattern_(j.at("pattern")), behavior_(parse_behavior(j.at("behavior").get<std::string>())),
        invert_(j.value("invert", false)) {}
  void apply(std::vector<Piece>& pieces, PieceStore&) const override {
    split_pieces(pieces, pattern_, behavior_, invert_);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The byte → character mapping itself is folded into the BPE vocab (see BpeModel), so this step only
// adds the prefix space and splits with GPT-2's regex when asked to.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const json& j)
      : add_prefix_space_(j.value("add_prefix_space", true)), use_regex_(j.value("use_regex", true)) {
    if (use_regex_) pattern_ = std::make_unique<Pattern>(json{{"Regex", kGpt2Pattern}});
  }
  void apply(std::vector<Piece>& pieces, PieceStore& store) const override {
    if (add_prefix_space_)
      for (Piece& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') {
          store.push_back(" " + std::string(p.text));
          p.text = store.back();
        }
    if (use_regex_) split_pieces(pieces, *pattern_, Behavior::isolated, false);
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<Pattern> pattern_;
};

enum class PrependScheme { always, first, never };

PrependScheme prepend_scheme(const json& j) {
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    auto s = j["prepend_scheme"].get<std::string>();
    if (s == "always") return PrependScheme::always;
    if (s == "first") return PrependScheme::first;
    if (s == "never") return PrependScheme::never;
    throw Error(cat("unsupported Metaspace prepend_scheme '", s, "'"));
  }
  return j.value("add_prefix_space", true) ? PrependScheme::always : PrependScheme::never;
}

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(const json& j)
      : replacement_(j.value("replacement", std::string("\xE2\x96\x81"))), scheme_(prepend_scheme(j)),
        split_(j.value("split", true)), pattern_(json{{"String", replacement_}}) {}
  void apply(std::vector<Piece>& pieces, PieceStore& store) const override {
    for (Piece& p : pieces) {
      std::string s;
      s.reserve(p.text.size() + 3);
      for (char c : p.text) {
        if (c == ' ') s += replacement_;
        else s.push_back(c);
      }
      bool prepend = scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && p.at_start);
      if (prepend && s.compare(0, replacement_.size(), replacement_) != 0) s.insert(0, replacement_);
      store.push_back(std::move(s));
      p.text = store.back();
    }
    if (split_) split_pieces(pieces, pattern_, Behavior::merged_with_next, false);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Pattern pattern_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<Piece>& pieces, PieceStore& store) const override {
    for (const auto& s : steps_) s->apply(pieces, store);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// ---- decoders

class ByteLevelDecoder : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool raw) const override {
    std::string bytes;
    const ByteLevelTable& table = byte_level_table();
    for (const auto& t : tokens) {
      std::size_t mark = bytes.size();
      if (!table.decode(t, bytes)) {  // a character outside the table: HF keeps the token as it is
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, raw ? std::move(bytes) : utf8_lossy(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const json& j)
      : replacement_(j.value("replacement", std::string("\xE2\x96\x81"))), scheme_(prepend_scheme(j)) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (std::size_t k = 0; k < t.size();) {
        if (t.compare(k, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && scheme_ != PrependScheme::never)) out.push_back(' ');
          k += replacement_.size();
        } else {
          out.push_back(t[k++]);
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const json& j) : pattern_(j.at("pattern")), content_(j.at("content").get<std::string>()) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    for (auto& t : tokens) t = replace_all(t, pattern_, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// "<0xNN>" → byte value, or -1.
int byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

class ByteFallbackDecoder : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool raw) const override {
    std::vector<std::string> out;
    std::string bytes;
    std::size_t count = 0;
    auto flush = [&] {
      if (count == 0) return;
      if (raw || utf8_lossy(bytes) == bytes) out.push_back(bytes);
      else for (std::size_t k = 0; k < count; ++k) out.emplace_back("\xEF\xBF\xBD");  // HF: one per byte
      bytes.clear();
      count = 0;
    };
    for (auto& t : tokens) {
      int b = byte_token(t);
      if (b >= 0) {
        bytes.push_back(char(b));
        ++count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool) const override {
    std::string all;
    for (auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const json& j)
      : content_(j.at("content").get<std::string>()), start_(j.value("start", 0)), stop_(j.value("stop", 0)) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    for (auto& t : tokens) {
      std::size_t b = 0, e = t.size();
      for (int k = 0; k < start_ && t.compare(b, content_.size(), content_) == 0 && b < e; ++k) b += content_.size();
      for (int k = 0; k < stop_ && e >= b + content_.size() &&
                      t.compare(e - content_.size(), content_.size(), content_) == 0; ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  int start_, stop_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<std::string>& tokens, bool raw) const override {
    for (const auto& s : steps_) s->apply(tokens, raw);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// ---- post-processors

class TemplatePostProcessor : public PostProcessor {
 public:
  explicit TemplatePostProcessor(const json& j) {
    const json null_json;
    const json& specials = j.contains("special_tokens") ? j["special_tokens"] : null_json;  // value() would copy
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        pieces_.push_back({true, {}});
      } else if (item.contains("SpecialToken")) {
        auto name = item["SpecialToken"].at("id").get<std::string>();
        if (!specials.contains(name)) throw Error(cat("TemplateProcessing: special token '", name, "' is not defined"));
        std::vector<TokenId> ids;
        for (const auto& id : specials[name].at("ids")) ids.push_back(json_token_id(id, "TemplateProcessing ids"));
        pieces_.push_back({false, std::move(ids)});
      } else {
        throw Error(cat("TemplateProcessing: unsupported piece ", brief_json(item)));
      }
    }
  }
  void apply(std::vector<TokenId>& ids) const override {
    std::vector<TokenId> out;
    out.reserve(ids.size() + 4);
    for (const auto& p : pieces_) {
      if (p.first) out.insert(out.end(), ids.begin(), ids.end());
      else out.insert(out.end(), p.second.begin(), p.second.end());
    }
    ids = std::move(out);
  }

 private:
  std::vector<std::pair<bool, std::vector<TokenId>>> pieces_;  // (is the sequence, else these ids)
};

// Roberta/Bert: cls + A + sep.
class ClsSepPostProcessor : public PostProcessor {
 public:
  explicit ClsSepPostProcessor(const json& j)
      : cls_(json_token_id(j.at("cls").at(1), "post_processor.cls")), sep_(json_token_id(j.at("sep").at(1), "post_processor.sep")) {}
  void apply(std::vector<TokenId>& ids) const override {
    ids.insert(ids.begin(), cls_);
    ids.push_back(sep_);
  }

 private:
  TokenId cls_, sep_;
};

class NoOpPostProcessor : public PostProcessor {
 public:
  void apply(std::vector<TokenId>&) const override {}
};

class SequencePostProcessor : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<TokenId>& ids) const override {
    for (const auto& s : steps_) s->apply(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// Sequences nest; building (and destroying) them recurses once per level, so a file nesting them 100 000
// deep overflowed the stack. Real files nest one or two.
constexpr int kMaxSequenceNesting = 64;

template <class T, class F>
std::vector<std::unique_ptr<T>> make_all(const json& list, const char* what, F make) {
  if (!list.is_array()) throw Error(cat(what, " of a Sequence is not a list"));
  thread_local int nesting = 0;
  struct Level {
    Level(const char* what) {
      if (nesting == kMaxSequenceNesting) throw Error(cat(what, ": Sequences nested more than ", kMaxSequenceNesting, " deep"));
      ++nesting;
    }
    ~Level() { --nesting; }
  } level(what);
  std::vector<std::unique_ptr<T>> out;
  for (const auto& j : list)
    if (auto p = make(j)) out.push_back(std::move(p));
  return out;
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  auto type = type_of(j, "normalizer");
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE, true);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, true);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, true);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, true);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(j.at("prepend").get<std::string>());
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(j);
  if (type == "Strip") return std::make_unique<StripNormalizer>(j.value("strip_left", true), j.value("strip_right", true));
  if (type == "Sequence")
    return std::make_unique<SequenceNormalizer>(make_all<Normalizer>(j.at("normalizers"), "normalizers", make_normalizer));
  throw Error(cat("unsupported normalizer '", type, "'"));
}

bool pre_tokenizer_is_byte_level(const json& j) {
  if (j.is_null()) return false;
  auto type = type_of(j, "pre_tokenizer");
  if (type == "ByteLevel") return true;
  if (type != "Sequence") return false;
  const auto& steps = j.at("pretokenizers");
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (pre_tokenizer_is_byte_level(steps[i])) {
      if (i + 1 != steps.size()) throw Error("unsupported pre_tokenizer: a step after ByteLevel");
      return true;
    }
  return false;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  auto type = type_of(j, "pre_tokenizer");
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(j);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(j);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(j);
  if (type == "Sequence")
    return std::make_unique<SequencePreTokenizer>(
        make_all<PreTokenizer>(j.at("pretokenizers"), "pretokenizers", make_pre_tokenizer));
  throw Error(cat("unsupported pre_tokenizer '", type, "'"));
}

std::unique_ptr<Decoder> make_decoder(const json& j) {
  if (j.is_null()) return nullptr;
  auto type = type_of(j, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(j);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(j);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(j);
  if (type == "Sequence")
    return std::make_unique<SequenceDecoder>(make_all<Decoder>(j.at("decoders"), "decoders", make_decoder));
  throw Error(cat("unsupported decoder '", type, "'"));
}

std::unique_ptr<PostProcessor> make_post_processor(const json& j) {
  if (j.is_null()) return nullptr;
  auto type = type_of(j, "post_processor");
  if (type == "TemplateProcessing") return std::make_unique<TemplatePostProcessor>(j);
  if (type == "ByteLevel") return std::make_unique<NoOpPostProcessor>();  // only moves offsets
  if (type == "RobertaProcessing" || type == "BertProcessing") return std::make_unique<ClsSepPostProcessor>(j);
  if (type == "Sequence")
    return std::make_unique<SequencePostProcessor>(
        make_all<PostProcessor>(j.at("processors"), "processors", make_post_processor));
  throw Error(cat("unsupported post_processor '", type, "'"));
}

}  // namespace llmbench::tok
