#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/tokenizer.h"

// The OpenAI wire protocol: request JSON → CompletionRequest, results → response JSON and SSE chunks.
namespace llmbench::serve {

// A request the server answers with an OpenAI-style error body {"error": {"message", "type", "code"}}.
class ApiError : public Error {
 public:
  ApiError(int status, std::string type, std::string code, const std::string& message, std::string param = {})
      : Error(message), status(status), type(std::move(type)), code(std::move(code)), param(std::move(param)) {}
  int status;
  std::string type;   // invalid_request_error, authentication_error, server_error
  std::string code;   // machine-readable: invalid_json, context_length_exceeded, model_not_found, …
  std::string param;  // the offending field, "" when none
};

// Limits of a request's `stop` (OpenAI allows 4 strings): each token is matched against each string.
constexpr std::size_t kMaxStopStrings = 16;
constexpr std::size_t kMaxStopBytes = 256;

// 400 invalid_request_error naming `param`.
ApiError bad_request(const std::string& param, const std::string& message, const std::string& code = "invalid_value");

enum class Endpoint { completions, chat };

// One parsed /v1/completions or /v1/chat/completions body (n = 1 only).
struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;                       // "" when absent
  std::optional<std::string> prompt_text;  // completions: "prompt" as a string
  std::vector<std::int64_t> prompt_ids;    // completions: "prompt" as token ids
  std::vector<ChatMessage> messages;       // chat
  std::optional<int> max_tokens;           // max_tokens (or chat's max_completion_tokens)
  double temperature = 1;                  // OpenAI's defaults
  double top_p = 1;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;                 // extension (vLLM's name)
  int min_tokens = 0;                      // extension (vLLM's name): EOS cannot end the request earlier
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
};

// Parses and checks the body's fields (types, ranges, n = 1); throws ApiError 400.
CompletionRequest parse_request(std::string_view body, Endpoint endpoint);

// The prompt's token ids: ids as given (each in [0, vocab)), text through the tokenizer with BOS, or the
// chat messages through the tokenizer's chat format. Throws ApiError 400.
std::vector<std::int64_t> prompt_tokens(const CompletionRequest& request, const Tokenizer& tokenizer,
                                        std::int64_t vocab_size);

// New tokens to generate: the request's max_tokens, else 16 (completions) or the rest of the context
// (chat). Throws ApiError 400 when the prompt or prompt + max_tokens does not fit in max_context.
int resolve_max_tokens(const CompletionRequest& request, std::size_t prompt_len, int max_context);

// {"error": {...}}
std::string error_json(const ApiError& error);

// value.dump(), with bytes that are not UTF-8 (a client's, quoted in a message) written as U+FFFD
// instead of throwing.
std::string dump_json(const nlohmann::json& value);

// Appends `text` as a JSON string literal (quotes included); `text` is valid UTF-8.
void append_json_string(std::string& out, std::string_view text);

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// A non-streamed completion or chat completion body. `timing_json` (an object) is added as
// "llmbench_timing" when not empty.
std::string completion_json(Endpoint endpoint, const std::string& id, std::int64_t created, const std::string& model,
                            const std::string& text, const std::string& finish_reason, Usage usage,
                            const std::string& timing_json);

// The data of streamed chunks for one response. Per-token chunks are a precomputed prefix and suffix
// around the escaped text, so a token costs one escape and two appends.
class ChunkFormat {
 public:
  ChunkFormat(Endpoint endpoint, const std::string& id, std::int64_t created, const std::string& model);
  // Chat's first chunk: delta {"role": "assistant", "content": ""}.
  std::string role_chunk() const;
  // A chunk carrying `text`, appended to `out`.
  void append_text(std::string& out, std::string_view text) const;
  // The chunk with finish_reason and an empty delta/text; `extra` (",\"key\":…" members) is added.
  std::string finish_chunk(const std::string& finish_reason, const std::string& extra) const;
  // stream_options.include_usage: choices [] and usage; `extra` as above.
  std::string usage_chunk(Usage usage, const std::string& extra) const;

 private:
  Endpoint endpoint_;
  std::string head_;         // {"id":…,"object":…,"created":…,"model":…,
  std::string text_prefix_;  // head_ + "choices":[{"index":0,"text": (or "delta":{"content":)
  std::string text_suffix_;  // ,"logprobs":null,"finish_reason":null}]}
};

// A process-unique response id: "cmpl-…" or "chatcmpl-…".
std::string make_response_id(Endpoint endpoint);

}  // namespace llmbench::serve
