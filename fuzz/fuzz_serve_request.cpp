// libFuzzer: the server's OpenAI request parser (both endpoints) and the error body built from each refusal,
// whose message may quote the client's bytes. ApiError is a clean refusal, but its body must be valid JSON
// (that is what the client gets); anything else escaping is a bug.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llmbench/serve/openai.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmbench::serve;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (Endpoint endpoint : {Endpoint::completions, Endpoint::chat}) {
    try {
      const CompletionRequest r = parse_request(body, endpoint);
      resolve_max_tokens(r, r.prompt_ids.size() + 1, 64);
    } catch (const ApiError& e) {
      if (!nlohmann::json::accept(error_json(e))) __builtin_trap();
    }
  }
  return 0;
}
