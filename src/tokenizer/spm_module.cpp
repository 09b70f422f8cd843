#include "spm_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

namespace llmbench::tok {
namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  // Set but empty is unset, as for the other variables; set, it is the only candidate: a path that does not
  // exist is a mistake to report, not a reason to load another module silently.
  const char* env = std::getenv("LLMBENCH_SPM_MODULE");
  if (env && *env) {
    std::error_code ec;
    if (!std::filesystem::exists(env, ec))
      throw UsageError(cat("LLMBENCH_SPM_MODULE=", env, ": no such file (unset it to use the module installed with llmbench)"));
    return {env};
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / "libllmbench_spm.so").string());                      // build tree
    out.push_back((exe.parent_path() / ".." / "lib" / "llmbench" / "libllmbench_spm.so").string());  // installed
  }
#ifdef LLMBENCH_SPM_MODULE_PATH
  out.push_back(LLMBENCH_SPM_MODULE_PATH);
#endif
  return out;
}

template <class F>
void bind(void* handle, F& fn, const char* name, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn) throw Error(cat(path, ": missing symbol ", name));
}

// ASan refuses RTLD_DEEPBIND; sanitizer runs are the torch-free tests, which have no protobuf to clash with.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDeepBind = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

SpmModule open_module() {
  std::string tried;
  for (const auto& path : candidates()) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
    if (!h) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    log::debug(cat("sentencepiece module: ", path));
    SpmModule m{};
    bind(h, m.load, "llmbench_spm_load", path);
    bind(h, m.free, "llmbench_spm_free", path);
    bind(h, m.piece_size, "llmbench_spm_piece_size", path);
    bind(h, m.bos_id, "llmbench_spm_bos_id", path);
    bind(h, m.eos_id, "llmbench_spm_eos_id", path);
    bind(h, m.unk_id, "llmbench_spm_unk_id", path);
    bind(h, m.piece_to_id, "llmbench_spm_piece_to_id", path);
    bind(h, m.id_to_piece, "llmbench_spm_id_to_piece", path);
    bind(h, m.is_control, "llmbench_spm_is_control", path);
    bind(h, m.is_byte, "llmbench_spm_is_byte", path);
    bind(h, m.is_unknown, "llmbench_spm_is_unknown", path);
    bind(h, m.encode, "llmbench_spm_encode", path);
    bind(h, m.decode, "llmbench_spm_decode", path);
    return m;
  }
  throw Error(cat("sentencepiece support module libllmbench_spm.so not found (tried ", tried, ")"));
}

}  // namespace

const SpmModule& spm_module() {
  static const SpmModule module = open_module();
  return module;
}

}  // namespace llmbench::tok
