#include <sentencepiece_processor.h>

#include <cstring>
#include <string>
#include <vector>

#include "spm_api.h"

struct LlmbenchSpm {
  sentencepiece::SentencePieceProcessor sp;
  std::vector<int> ids;
  std::string text;
  std::string piece;
};

namespace {
void set_error(char* error, size_t error_len, const std::string& message) {
  if (!error || error_len == 0) return;
  std::strncpy(error, message.c_str(), error_len - 1);
  error[error_len - 1] = '\0';
}
}  // namespace

extern "C" {

LlmbenchSpm* llmbench_spm_load(const char* bytes, size_t len, char* error, size_t error_len) {
  auto* m = new LlmbenchSpm;
  auto status = m->sp.LoadFromSerializedProto(std::string(bytes, len));
  if (!status.ok()) {
    set_error(error, error_len, status.ToString());
    delete m;
    return nullptr;
  }
  return m;
}

void llmbench_spm_free(LlmbenchSpm* sp) { delete sp; }
int llmbench_spm_piece_size(const LlmbenchSpm* sp) { return sp->sp.GetPieceSize(); }
int llmbench_spm_bos_id(const LlmbenchSpm* sp) { return sp->sp.bos_id(); }
int llmbench_spm_eos_id(const LlmbenchSpm* sp) { return sp->sp.eos_id(); }
int llmbench_spm_unk_id(const LlmbenchSpm* sp) { return sp->sp.unk_id(); }

int llmbench_spm_piece_to_id(const LlmbenchSpm* sp, const char* piece, size_t len) {
  return sp->sp.PieceToId(std::string(piece, len));
}

const char* llmbench_spm_id_to_piece(const LlmbenchSpm* sp, int id, size_t* len) {
  const std::string& p = sp->sp.IdToPiece(id);
  *len = p.size();
  return p.data();
}

int llmbench_spm_is_control(const LlmbenchSpm* sp, int id) { return sp->sp.IsControl(id) ? 1 : 0; }
int llmbench_spm_is_byte(const LlmbenchSpm* sp, int id) { return sp->sp.IsByte(id) ? 1 : 0; }
int llmbench_spm_is_unknown(const LlmbenchSpm* sp, int id) { return sp->sp.IsUnknown(id) ? 1 : 0; }

int llmbench_spm_encode(LlmbenchSpm* sp, const char* text, size_t len, const int** ids, char* error, size_t error_len) {
  sp->ids.clear();
  auto status = sp->sp.Encode(std::string(text, len), &sp->ids);
  if (!status.ok()) {
    set_error(error, error_len, status.ToString());
    return -1;
  }
  *ids = sp->ids.data();
  return static_cast<int>(sp->ids.size());
}

int llmbench_spm_decode(LlmbenchSpm* sp, const int* ids, size_t count, const char** text, size_t* text_len,
                        char* error, size_t error_len) {
  sp->text.clear();
  auto status = sp->sp.Decode(std::vector<int>(ids, ids + count), &sp->text);
  if (!status.ok()) {
    set_error(error, error_len, status.ToString());
    return -1;
  }
  *text = sp->text.data();
  *text_len = sp->text.size();
  return 0;
}

}  // extern "C"
