#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/config/load_options.h"
#include "llmbench/report/results.h"

namespace llmbench {

struct LoadHooks {
  std::function<bool()> should_stop;                      // polled every 50 ms (Ctrl-C)
  std::function<void(const std::string&)> on_progress;    // one line per finished point
};

// Checks everything that can be checked before a request is sent; throws UsageError.
void validate(const LoadOptions& options);

// --search AXIS:MIN:MAX: bisection for the highest load whose goodput fraction meets `target`.
struct SearchSpec {
  std::string axis;  // request_rate | concurrency
  double min = 0, max = 0;
  double target = 0.95;
  int steps = 6;
};
std::optional<SearchSpec> parse_search(const LoadOptions& options);  // nullopt without --search; UsageError

// Runs every point (warm-ups first, never recorded) and returns the results with mode "load" points.
// A failing request never stops the run; `interrupted` is set when should_stop ended it.
Results run_load(const LoadOptions& options, const LoadHooks& hooks = {});

// --api-key, or the value of the variable --api-key-env names ("" for neither); UsageError when both are
// given, or the variable is not set.
std::string api_key_of(const LoadOptions& options);

// The request body for one prompt (stream and usage unless `stream` is false, max_tokens = min_tokens =
// output_len, ignore_eos), with
// `extra` (an object) merged in as a JSON merge patch: its fields override ours, a null removes one; then
// `line_extra` (a trace line's "extra") the same way.
std::string request_body(const std::string& api, const std::string& model, const std::string& prompt, int output_len,
                         const nlohmann::json& extra = nullptr, bool stream = true, const nlohmann::json& line_extra = nullptr);
// A turn of a conversation: `history` is its texts so far, user, assistant, user, ... (ending with the new
// user prompt, so an odd count). chat: one message each, roles alternating; completions: the texts joined
// into one prompt. request_body(prompt) is turn_body({prompt}).
std::string turn_body(const std::string& api, const std::string& model, const std::vector<std::string>& history,
                      int output_len, const nlohmann::json& extra = nullptr, bool stream = true,
                      const nlohmann::json& line_extra = nullptr);

// A chat request whose messages are given (a trace line's "messages"), otherwise as turn_body.
std::string messages_body(const std::string& model, const nlohmann::json& messages, int output_len,
                          const nlohmann::json& extra = nullptr, bool stream = true, const nlohmann::json& line_extra = nullptr);

// --extra-body: "" gives null; else a JSON object without model, prompt, messages or stream (UsageError).
nlohmann::json parse_extra_body(const std::string& text);

}  // namespace llmbench
