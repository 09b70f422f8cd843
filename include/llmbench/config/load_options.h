#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace llmbench {

// Every option of `llmbench load` (docs/load.md), and of an `endpoint:` entry of a `compare` YAML
// file (docs/config.md). validate() and run_load() are in llmbench/load/runner.h.
struct LoadOptions {
  std::string endpoint;                // empty: start `serve_command` on a loopback port
  std::string model;                   // empty: the first entry of GET /v1/models
  std::string label;                   // the points' label; empty: the model
  std::string api = "completions";     // completions | chat
  std::vector<int> concurrency;        // closed loop, one point each
  std::vector<double> request_rate;    // open loop, one point each (not with concurrency)
  int max_concurrency = 0;             // open loop: requests in flight at most (0: no cap)
  std::string search;                  // rate:MIN:MAX | concurrency:MIN:MAX: highest load meeting the SLO
  double search_goodput = 0.95;        // the goodput fraction a --search probe must reach
  int search_steps = 6;                // bisection steps after the two bounds
  std::string arrival = "poisson";     // poisson | constant | gamma:SHAPE
  int num_requests = 0;                // 0 and no duration: 100
  double duration_s = 0;
  int warmup_requests = 0;
  int input_len = 128;
  int output_len = 64;
  bool output_len_given = false;       // --output-len given: it also sets a dataset's output lengths
  double range_ratio = 0;              // synthetic lengths uniform in [L·(1−R), L·(1+R)]; 0: exact
  int prefix_len = 0;                  // synthetic prompts share their first P tokens (prefix caching)
  std::string dataset = "synthetic";   // synthetic | sharegpt:FILE | jsonl:FILE | trace:FILE
  // trace:FILE without --concurrency, --request-rate or --search replays the trace's arrival times.
  double trace_speedup = 1;            // replay F times faster (timestamps / F)
  int trace_block_size = 512;          // tokens per hash id of a trace (Mooncake's 512)
  // Multi-turn conversations: each sends `turns` requests one after another, each with the history so far
  // (its user prompts and the answers the server gave); `turn_delay_ms` of think time between an answer
  // and the next turn. A load (--concurrency, --request-rate) is then one of conversations. A stddev spreads
  // each conversation's turns or each think time around them (normal draws, seeded; load/turns.h).
  int turns = 1;
  double turns_stddev = 0;
  double turn_delay_ms = 0;
  double turn_delay_stddev_ms = 0;
  std::string tokenizer;               // prompts and token counts; empty: the model's when it is tiny or a directory
  std::string slo;                     // ttft_ms=X,tpot_ms=Y,e2e_ms=Z
  std::uint64_t seed = 0;
  double timeout_s = 60;
  // Client cancellations (AIPerf's request cancellation): `cancel_rate` percent of the requests, chosen by
  // --seed, are abandoned `cancel_delay_ms` after they were sent (the connection closed) unless done by then.
  double cancel_rate = 0;
  double cancel_delay_ms = 0;
  double slice_s = 0;                  // results by_slice in windows of this many seconds; 0: none
  std::vector<std::string> headers;    // "Key: value"
  std::string api_key;                 // Authorization: Bearer KEY
  std::string api_key_env;             // or the key is in this environment variable (not in argv or results)
  std::string ca_cert;                 // https: PEM certificates trusted besides the system's
  bool insecure = false;               // https: no check of the server's certificate
  std::string extra_body;              // a JSON object merged into every request body (merge patch)
  bool no_stream = false;              // ask for whole responses ("stream": false): e2e only
  bool server_metrics = false;         // scrape the server's Prometheus page while each point runs
  // Its URL (implies server_metrics); empty: ENDPOINT/metrics. Several: each page's series are labelled
  // instance="HOST:PORT" (HOST:PORT/PATH when two share a server), as Prometheus labels its targets'.
  std::vector<std::string> server_metrics_urls;
  double server_metrics_interval_ms = 500;
  // Without an endpoint: the server to start (`--port 0` is appended) and how long it may take.
  std::vector<std::string> serve_command;
  double serve_timeout_s = 300;
};

}  // namespace llmbench
