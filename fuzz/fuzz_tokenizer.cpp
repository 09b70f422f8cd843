// libFuzzer: the tokenizer.json loader, then encode + decode. Input: tokenizer.json, optionally followed by
// a NUL byte and the text to encode (else a fixed sample). Error is a clean refusal; anything else a bug.
#include <cstdint>
#include <string_view>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view json = in, text = "Hello, world! It's 2024: naïve café — 你好 \t\n  x";
  if (auto nul = in.find('\0'); nul != std::string_view::npos) {
    json = in.substr(0, nul);
    text = in.substr(nul + 1);
  }
  try {
    auto tok = llmbench::tokenizer_from_json(json, "", "fuzz.json");
    auto ids = tok->encode(text, true);
    tok->decode(ids);
    tok->decode_bytes(ids, true);
  } catch (const llmbench::Error&) {
  }
  return 0;
}
