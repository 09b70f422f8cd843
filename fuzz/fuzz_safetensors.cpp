// libFuzzer: the safetensors header parser on arbitrary bytes. Any Error is a clean refusal; a crash,
// a sanitizer report or another exception is a bug. Accepted files must hand out views inside the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size && write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  try {
    llmbench::SafetensorsFile file("/proc/self/fd/" + std::to_string(fd));
    volatile std::uint8_t sink = 0;
    for (const auto& [name, v] : file.tensors()) {
      if (v.nbytes != static_cast<std::size_t>(v.numel()) * llmbench::element_size(v.dtype)) std::abort();
      if (v.nbytes) sink = sink + v.data[0] + v.data[v.nbytes - 1];  // inside the mapping, or SEGV
    }
  } catch (const llmbench::Error&) {
  }
  close(fd);
  return 0;
}
