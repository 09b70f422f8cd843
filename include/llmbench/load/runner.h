#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llmbench/report/results.h"

namespace llmbench {

// Every option of `llmbench load` (docs/load.md).
struct LoadOptions {
  std::string endpoint;                // empty: start `serve_command` on a loopback port
  std::string model;                   // empty: the first entry of GET /v1/models
  std::string api = "completions";     // completions | chat
  std::vector<int> concurrency;        // closed loop, one point each
  std::vector<double> request_rate;    // open loop, one point each (not with concurrency)
  std::string arrival = "poisson";     // poisson | constant | gamma:SHAPE
  int num_requests = 0;                // 0 and no duration: 100
  double duration_s = 0;
  int warmup_requests = 0;
  int input_len = 128;
  int output_len = 64;
  std::string dataset = "synthetic";   // synthetic | sharegpt:FILE | jsonl:FILE
  std::string tokenizer;               // prompts and token counts; empty: the model's when it is tiny or a directory
  std::string slo;                     // ttft_ms=X,tpot_ms=Y,e2e_ms=Z
  std::uint64_t seed = 0;
  double timeout_s = 60;
  std::vector<std::string> headers;    // "Key: value"
  std::string api_key;                 // Authorization: Bearer KEY
  // Without an endpoint: the server to start (`--port 0` is appended) and how long it may take.
  std::vector<std::string> serve_command;
  double serve_timeout_s = 300;
};

struct LoadHooks {
  std::function<bool()> should_stop;                      // polled every 50 ms (Ctrl-C)
  std::function<void(const std::string&)> on_progress;    // one line per finished point
};

// Checks everything that can be checked before a request is sent; throws UsageError.
void validate(const LoadOptions& options);

// Runs every point (warm-ups first, never recorded) and returns the results with mode "load" points.
// A failing request never stops the run; `interrupted` is set when should_stop ended it.
Results run_load(const LoadOptions& options, const LoadHooks& hooks = {});

// The request body for one prompt (stream, usage, max_tokens = min_tokens = output_len, ignore_eos).
std::string request_body(const std::string& api, const std::string& model, const std::string& prompt, int output_len);

}  // namespace llmbench
