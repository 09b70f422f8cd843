#include "sp_tokenizer.h"

#include <sentencepiece_processor.h>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/utf8.h"

namespace llmbench {
namespace {

// A sentencepiece .model through libsentencepiece (checkpoints that ship no tokenizer.json).
class SpTokenizer : public Tokenizer {
 public:
  SpTokenizer(const std::string& model_bytes, const tok::TokenizerConfig& config, const std::string& source) {
    auto status = sp_.LoadFromSerializedProto(model_bytes);
    if (!status.ok()) throw Error(cat(source, ": not a sentencepiece model: ", status.ToString()));
    add_bos_ = config.add_bos_token.value_or(true);
    add_eos_ = config.add_eos_token.value_or(false);
    info_.source = source;
    info_.kind = "sentencepiece";
    if (sp_.bos_id() >= 0) info_.bos_id = sp_.bos_id();
    if (sp_.eos_id() >= 0) info_.eos_id = sp_.eos_id();
    if (config.bos_token) {
      info_.bos_token = *config.bos_token;
      int id = sp_.PieceToId(*config.bos_token);
      if (id != sp_.unk_id() || *config.bos_token == sp_.IdToPiece(sp_.unk_id())) info_.bos_id = id;
    } else if (info_.bos_id) {
      info_.bos_token = sp_.IdToPiece(*info_.bos_id);
    }
    if (config.eos_token) {
      int id = sp_.PieceToId(*config.eos_token);
      if (id != sp_.unk_id()) info_.eos_id = id;
    }
    std::vector<std::string> specials;
    for (int i = 0; i < sp_.GetPieceSize(); ++i)
      if (sp_.IsControl(i)) specials.push_back(sp_.IdToPiece(i));
    info_.chat_format = detect_chat_format(config.chat_template, specials);
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special) const override {
    std::size_t bad = utf8::first_invalid(text);
    if (bad != text.size()) throw Error(cat("text is not valid UTF-8 at byte offset ", bad));
    std::vector<int> pieces;
    auto status = sp_.Encode(std::string(text), &pieces);
    if (!status.ok()) throw Error(cat("sentencepiece encode failed: ", status.ToString()));
    std::vector<TokenId> ids;
    ids.reserve(pieces.size() + 2);
    if (add_special && add_bos_ && info_.bos_id) ids.push_back(*info_.bos_id);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    if (add_special && add_eos_ && info_.eos_id) ids.push_back(*info_.eos_id);
    return ids;
  }

  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override {
    std::string out;
    auto status = sp_.Decode(valid_ids(ids), &out);
    if (!status.ok()) throw Error(cat("sentencepiece decode failed: ", status.ToString()));
    return out;
  }

  // Pieces with ▁ as spaces and <0xNN> as raw bytes, the first leading space dropped (as Decode does),
  // so that a code point split over byte pieces stays visible as unfinished.
  std::string decode_bytes(const std::vector<TokenId>& ids, bool skip_special) const override {
    std::string out;
    for (int id : valid_ids(ids)) {
      if (sp_.IsControl(id)) continue;
      if (sp_.IsByte(id)) {
        out.push_back(char(std::stoi(sp_.IdToPiece(id).substr(3, 2), nullptr, 16)));
        continue;
      }
      if (sp_.IsUnknown(id)) {
        out += " \xE2\x81\x87 ";
        continue;
      }
      const std::string& piece = sp_.IdToPiece(id);
      for (std::size_t k = 0; k < piece.size();) {
        if (piece.compare(k, 3, "\xE2\x96\x81") == 0) {
          out.push_back(' ');
          k += 3;
        } else {
          out.push_back(piece[k++]);
        }
      }
    }
    if (!out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  std::size_t vocab_size() const override { return std::size_t(sp_.GetPieceSize()); }

 private:
  std::vector<int> valid_ids(const std::vector<TokenId>& ids) const {
    std::vector<int> out;
    out.reserve(ids.size());
    for (TokenId id : ids)
      if (id >= 0 && id < sp_.GetPieceSize()) out.push_back(id);
    return out;
  }

  sentencepiece::SentencePieceProcessor sp_;
  bool add_bos_ = true;
  bool add_eos_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> sentencepiece_tokenizer(const std::string& model_bytes, std::string_view config_json,
                                                   const std::string& source) {
  return std::make_unique<SpTokenizer>(model_bytes,
                                       tok::parse_tokenizer_config(config_json, source + " (tokenizer_config.json)"),
                                       source);
}

}  // namespace llmbench
