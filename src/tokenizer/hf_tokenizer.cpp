#include <unordered_map>

#include <nlohmann/json.hpp>

#include "added_vocab.h"
#include "bpe.h"
#include "json_ids.h"
#include "llmbench/base/error.h"
#include "llmbench/tokenizer/tokenizer.h"
#include "llmbench/base/utf8.h"
#include "pipeline.h"
#include "tokenizer_config.h"

namespace llmbench {
namespace {

using nlohmann::json;

// A tokenizer.json tokenizer: added tokens → normalizer → pre-tokenizer → BPE → post-processor,
// and back through the decoder, as HF tokenizers runs them.
class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(const json& j, const tok::TokenizerConfig& config, const std::string& source);

  std::vector<TokenId> encode(std::string_view text, bool add_special) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override {
    return decode_impl(ids, skip_special, false);
  }
  std::string decode_bytes(const std::vector<TokenId>& ids, bool skip_special) const override {
    return decode_impl(ids, skip_special, true);
  }
  std::size_t vocab_size() const override { return vocab_size_; }

 private:
  void encode_text(std::string_view text, bool at_start, std::vector<TokenId>& ids) const;
  void encode_normalized(std::string_view text, bool at_start, std::vector<TokenId>& ids) const;
  std::string decode_impl(const std::vector<TokenId>& ids, bool skip_special, bool raw) const;
  std::optional<TokenId> token_id(const std::string& token) const;

  std::unique_ptr<tok::BpeModel> model_;
  std::unique_ptr<tok::Normalizer> normalizer_;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<tok::PostProcessor> post_processor_;
  std::unique_ptr<tok::Decoder> decoder_;
  tok::AddedTokenMatcher raw_added_;         // normalized: false, matched on the input
  tok::AddedTokenMatcher normalized_added_;  // normalized: true, matched after normalisation
  std::unordered_map<TokenId, tok::AddedToken> added_by_id_;
  std::size_t vocab_size_ = 0;
  bool split_at_metaspace_ = false;  // no pre-tokenizer, but words can be cut before "▁" (Llama 2)
};

constexpr std::string_view kMetaspace = "\xE2\x96\x81";

HfTokenizer::HfTokenizer(const json& j, const tok::TokenizerConfig& config, const std::string& source) {
  if (!j.is_object()) throw Error("not a JSON object");
  const json& model = j.at("model");
  std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") throw Error(cat("unsupported model '", type, "' (only BPE)"));
  const json null_json;
  auto node = [&](const char* key) -> const json& { return j.contains(key) ? j[key] : null_json; };
  if (!node("truncation").is_null()) throw Error("unsupported component 'truncation'");
  if (!node("padding").is_null()) throw Error("unsupported component 'padding'");
  normalizer_ = tok::make_normalizer(node("normalizer"));
  pre_tokenizer_ = tok::make_pre_tokenizer(node("pre_tokenizer"));
  post_processor_ = tok::make_post_processor(node("post_processor"));
  decoder_ = tok::make_decoder(node("decoder"));
  model_ = std::make_unique<tok::BpeModel>(model, tok::pre_tokenizer_is_byte_level(node("pre_tokenizer")));

  vocab_size_ = model_->size();
  split_at_metaspace_ = !pre_tokenizer_ && model_->never_merges_across(kMetaspace);
  std::vector<std::string> special_contents;
  for (const auto& a : node("added_tokens").is_array() ? node("added_tokens") : null_json) {  // no copy: it may nest deep
    tok::AddedToken t;
    t.content = a.at("content").get<std::string>();
    t.id = tok::json_token_id(a.at("id"), "added_tokens[].id");
    t.special = a.value("special", false);
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    t.single_word = a.value("single_word", false);
    t.normalized = a.value("normalized", !t.special);
    if (!model_->token(t.id)) ++vocab_size_;
    added_by_id_[t.id] = t;
    if (t.special) special_contents.push_back(t.content);
    if (t.normalized && normalizer_) {  // HF matches these against normalised text, so normalise them too
      tok::AddedToken n = t;
      normalizer_->apply(n.content);
      normalized_added_.add(n);
    } else if (t.normalized) {
      normalized_added_.add(t);
    } else {
      raw_added_.add(t);
    }
  }

  info_.source = source;
  info_.kind = "tokenizer.json BPE";
  if (config.bos_token) {
    info_.bos_token = *config.bos_token;
    info_.bos_id = token_id(*config.bos_token);
  }
  if (config.eos_token) info_.eos_id = token_id(*config.eos_token);
  info_.chat_format = detect_chat_format(config.chat_template, special_contents);
}

std::optional<TokenId> HfTokenizer::token_id(const std::string& token) const {
  for (const auto& [id, t] : added_by_id_)
    if (t.content == token) return id;
  return model_->id_of(token);
}

std::vector<TokenId> HfTokenizer::encode(std::string_view text, bool add_special) const {
  std::size_t bad = utf8::first_invalid(text);
  if (bad != text.size())
    throw Error(cat("text is not valid UTF-8 at byte offset ", bad, " (byte 0x", std::hex,
                    int(static_cast<unsigned char>(text[bad])), ")"));
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  try {  // what fails here is the file's (a regex past PCRE2's limits): name it
    if (raw_added_.empty()) {
      encode_text(text, true, ids);
    } else {
      std::vector<tok::Segment> segments;
      raw_added_.split(text, segments);
      for (const auto& s : segments) {
        if (s.id >= 0) ids.push_back(s.id);
        else encode_text(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
      }
    }
  } catch (const Error& e) {
    throw Error(cat(info_.source, ": ", e.what()));
  }
  if (add_special && post_processor_) post_processor_->apply(ids);
  return ids;
}

void HfTokenizer::encode_text(std::string_view text, bool at_start, std::vector<TokenId>& ids) const {
  if (!normalizer_ && normalized_added_.empty()) return encode_normalized(text, at_start, ids);
  std::string normalized(text);
  if (normalizer_) normalizer_->apply(normalized);
  if (normalized_added_.empty()) return encode_normalized(normalized, at_start, ids);
  std::vector<tok::Segment> segments;
  normalized_added_.split(normalized, segments);
  for (const auto& s : segments) {
    if (s.id >= 0) ids.push_back(s.id);
    else encode_normalized(std::string_view(normalized).substr(s.begin, s.end - s.begin), at_start && s.begin == 0, ids);
  }
}

void HfTokenizer::encode_normalized(std::string_view text, bool at_start, std::vector<TokenId>& ids) const {
  if (text.empty()) return;
  if (!pre_tokenizer_ && split_at_metaspace_) {
    // Cut before each "▁" that follows another character; runs of "▁" stay together.
    std::size_t start = 0;
    for (std::size_t p = text.find(kMetaspace, 1); p != std::string_view::npos; p = text.find(kMetaspace, p + 3)) {
      if (p >= 3 && text.compare(p - 3, 3, kMetaspace) == 0) continue;
      model_->encode_word(text.substr(start, p - start), ids);
      start = p;
    }
    return model_->encode_word(text.substr(start), ids);
  }
  if (!pre_tokenizer_) return model_->encode_word(text, ids);
  thread_local std::vector<tok::Piece> pieces;
  tok::PieceStore store;
  pieces.assign(1, tok::Piece{text, at_start});
  pre_tokenizer_->apply(pieces, store);
  for (const auto& p : pieces) model_->encode_word(p.text, ids);
}

std::string HfTokenizer::decode_impl(const std::vector<TokenId>& ids, bool skip_special, bool raw) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    auto it = added_by_id_.find(id);
    if (it != added_by_id_.end()) {
      if (!(skip_special && it->second.special)) tokens.push_back(it->second.content);
    } else if (const std::string* t = model_->token(id)) {
      tokens.push_back(*t);
    }  // ids outside the vocabulary are skipped, as HF does
  }
  std::string out;
  if (!decoder_) {  // HF joins the tokens with spaces when there is no decoder
    for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  decoder_->apply(tokens, raw);
  for (const auto& t : tokens) out += t;
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                               const std::string& source) {
  tok::TokenizerConfig config = tok::parse_tokenizer_config(config_json, tok::config_source(source));
  json j;
  try {
    j = json::parse(tokenizer_json);
  } catch (const json::exception& e) {
    throw Error(cat(source, ": malformed JSON (truncated or not a tokenizer.json): ", e.what()));
  }
  try {
    return std::make_unique<HfTokenizer>(j, config, source);
  } catch (const json::exception& e) {
    throw Error(cat(source, ": unexpected tokenizer.json structure: ", e.what()));
  } catch (const Error& e) {
    throw Error(cat(source, ": ", e.what()));
  }
}

}  // namespace llmbench
