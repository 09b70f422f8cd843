#pragma once
#include <cstddef>

// The C interface of the sentencepiece module (libllmbench_spm.so). libsentencepiece embeds its own
// protobuf-lite, which clashes with the libprotobuf that Debian's libtorch loads; the module is opened
// with RTLD_DEEPBIND so each keeps its own copy. Strings returned are valid until the next call.
extern "C" {
typedef struct LlmbenchSpm LlmbenchSpm;

// Returns null and fills `error` (NUL-terminated, at most error_len bytes) when the bytes are no model.
LlmbenchSpm* llmbench_spm_load(const char* bytes, size_t len, char* error, size_t error_len);
void llmbench_spm_free(LlmbenchSpm* sp);
int llmbench_spm_piece_size(const LlmbenchSpm* sp);
int llmbench_spm_bos_id(const LlmbenchSpm* sp);
int llmbench_spm_eos_id(const LlmbenchSpm* sp);
int llmbench_spm_unk_id(const LlmbenchSpm* sp);
int llmbench_spm_piece_to_id(const LlmbenchSpm* sp, const char* piece, size_t len);
// Piece text of `id`; *len receives its length.
const char* llmbench_spm_id_to_piece(const LlmbenchSpm* sp, int id, size_t* len);
// 1 when `id` is a control / byte / unknown piece.
int llmbench_spm_is_control(const LlmbenchSpm* sp, int id);
int llmbench_spm_is_byte(const LlmbenchSpm* sp, int id);
int llmbench_spm_is_unknown(const LlmbenchSpm* sp, int id);
// Encodes text into a buffer owned by `sp`; returns the count, or -1 with `error` filled.
int llmbench_spm_encode(LlmbenchSpm* sp, const char* text, size_t len, const int** ids, char* error, size_t error_len);
// Decodes ids into a buffer owned by `sp`; returns 0, or -1 with `error` filled.
int llmbench_spm_decode(LlmbenchSpm* sp, const int* ids, size_t count, const char** text, size_t* text_len,
                        char* error, size_t error_len);
}
