#pragma once
#include <string>

#include "../spm/spm_api.h"

namespace llmbench::tok {

// The functions of libllmbench_spm.so, opened once with RTLD_DEEPBIND (see spm_api.h for why).
struct SpmModule {
  decltype(&llmbench_spm_load) load;
  decltype(&llmbench_spm_free) free;
  decltype(&llmbench_spm_piece_size) piece_size;
  decltype(&llmbench_spm_bos_id) bos_id;
  decltype(&llmbench_spm_eos_id) eos_id;
  decltype(&llmbench_spm_unk_id) unk_id;
  decltype(&llmbench_spm_piece_to_id) piece_to_id;
  decltype(&llmbench_spm_id_to_piece) id_to_piece;
  decltype(&llmbench_spm_is_control) is_control;
  decltype(&llmbench_spm_is_byte) is_byte;
  decltype(&llmbench_spm_is_unknown) is_unknown;
  decltype(&llmbench_spm_encode) encode;
  decltype(&llmbench_spm_decode) decode;
};

// Loads $LLMBENCH_SPM_MODULE when not empty (UsageError when there is no such file), else looks next to the
// executable, in <executable>/../lib/llmbench (cmake --install), then at its build-tree path compiled in (test
// binaries); throws Error saying where it looked when none loads.
const SpmModule& spm_module();

}  // namespace llmbench::tok
