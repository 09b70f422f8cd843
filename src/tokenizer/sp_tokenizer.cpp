#include "sp_tokenizer.h"

#include "llmbench/base/error.h"
#include "llmbench/base/utf8.h"
#include "spm_module.h"

#include <memory>
#include <mutex>

namespace llmbench {
namespace {

// A sentencepiece .model through libsentencepiece (checkpoints that ship no tokenizer.json).
class SpTokenizer : public Tokenizer {
 public:
  SpTokenizer(const std::string& model_bytes, const tok::TokenizerConfig& config, const std::string& source)
      : m_(tok::spm_module()) {
    char error[512] = {0};
    sp_ = m_.load(model_bytes.data(), model_bytes.size(), error, sizeof error);
    if (!sp_) throw Error(cat(source, ": not a sentencepiece model: ", error));
    guard_.reset(sp_, m_.free);
    add_bos_ = config.add_bos_token.value_or(true);
    add_eos_ = config.add_eos_token.value_or(false);
    info_.source = source;
    info_.kind = "sentencepiece";
    if (m_.bos_id(sp_) >= 0) info_.bos_id = m_.bos_id(sp_);
    if (m_.eos_id(sp_) >= 0) info_.eos_id = m_.eos_id(sp_);
    if (config.bos_token) {
      info_.bos_token = *config.bos_token;
      int id = piece_to_id(*config.bos_token);
      if (id != m_.unk_id(sp_) || *config.bos_token == piece(m_.unk_id(sp_))) info_.bos_id = id;
    } else if (info_.bos_id) {
      info_.bos_token = piece(*info_.bos_id);
    }
    if (config.eos_token) {
      int id = piece_to_id(*config.eos_token);
      if (id != m_.unk_id(sp_)) info_.eos_id = id;
    }
    std::vector<std::string> specials;
    for (int i = 0; i < m_.piece_size(sp_); ++i)
      if (m_.is_control(sp_, i)) specials.push_back(piece(i));
    info_.chat_format = detect_chat_format(config.chat_template, specials);
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special) const override {
    std::size_t bad = utf8::first_invalid(text);
    if (bad != text.size()) throw Error(cat("text is not valid UTF-8 at byte offset ", bad));
    std::vector<int> pieces;
    char error[512] = {0};
    const int* raw = nullptr;
    std::lock_guard<std::mutex> lock(mu_);  // the module's result buffers are per handle
    int count = m_.encode(sp_, text.data(), text.size(), &raw, error, sizeof error);
    if (count < 0) throw Error(cat("sentencepiece encode failed: ", error));
    pieces.assign(raw, raw + count);
    std::vector<TokenId> ids;
    ids.reserve(pieces.size() + 2);
    if (add_special && add_bos_ && info_.bos_id) ids.push_back(*info_.bos_id);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    if (add_special && add_eos_ && info_.eos_id) ids.push_back(*info_.eos_id);
    return ids;
  }

  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override {
    std::vector<int> valid = valid_ids(ids);
    char error[512] = {0};
    const char* text = nullptr;
    std::size_t len = 0;
    std::lock_guard<std::mutex> lock(mu_);
    if (m_.decode(sp_, valid.data(), valid.size(), &text, &len, error, sizeof error) != 0)
      throw Error(cat("sentencepiece decode failed: ", error));
    return std::string(text, len);
  }

  // Pieces with ▁ as spaces and <0xNN> as raw bytes, the first leading space dropped (as Decode does),
  // so that a code point split over byte pieces stays visible as unfinished.
  std::string decode_bytes(const std::vector<TokenId>& ids, bool skip_special) const override {
    std::string out;
    for (int id : valid_ids(ids)) {
      if (m_.is_control(sp_, id)) continue;
      if (m_.is_byte(sp_, id)) {
        out.push_back(char(std::stoi(piece(id).substr(3, 2), nullptr, 16)));
        continue;
      }
      if (m_.is_unknown(sp_, id)) {
        out += " \xE2\x81\x87 ";
        continue;
      }
      const std::string piece_text = piece(id);
      for (std::size_t k = 0; k < piece_text.size();) {
        if (piece_text.compare(k, 3, "\xE2\x96\x81") == 0) {
          out.push_back(' ');
          k += 3;
        } else {
          out.push_back(piece_text[k++]);
        }
      }
    }
    if (!out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  std::size_t vocab_size() const override { return std::size_t(m_.piece_size(sp_)); }

 private:
  std::vector<int> valid_ids(const std::vector<TokenId>& ids) const {
    std::vector<int> out;
    out.reserve(ids.size());
    for (TokenId id : ids)
      if (id >= 0 && id < m_.piece_size(sp_)) out.push_back(id);
    return out;
  }

  // Piece text of `id`.
  std::string piece(int id) const {
    std::size_t len = 0;
    const char* p = m_.id_to_piece(sp_, id, &len);
    return std::string(p, len);
  }
  int piece_to_id(const std::string& piece) const { return m_.piece_to_id(sp_, piece.data(), piece.size()); }

  const tok::SpmModule& m_;
  LlmbenchSpm* sp_ = nullptr;
  std::shared_ptr<LlmbenchSpm> guard_;  // frees sp_ through the module
  mutable std::mutex mu_;
  bool add_bos_ = true;
  bool add_eos_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> sentencepiece_tokenizer(const std::string& model_bytes, std::string_view config_json,
                                                   const std::string& source) {
  return std::make_unique<SpTokenizer>(model_bytes,
                                       tok::parse_tokenizer_config(config_json, tok::config_source(source)),
                                       source);
}

}  // namespace llmbench
