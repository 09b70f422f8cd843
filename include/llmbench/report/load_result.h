#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmbench {

// One request of `llmbench load` as the client saw it (milliseconds, steady clock). Definitions in
// docs/load.md.
// The error of a request the client abandoned on purpose (--cancel-rate): not the server's failure.
inline constexpr const char* kClientCancel = "client_cancel";

struct RequestRecord {
  double start_ms = 0;        // request issued, since the point started
  double scheduled_ms = 0;    // when the arrival process wanted it issued (closed loop: = start_ms)
  bool ok = false;
  std::string error;          // reason when failed: http_<status>, timeout, disconnect, malformed_sse, ...
  std::string error_detail;   // the server's message with it (an error body's or event's), "" when none
  double ttft_ms = 0;         // start to the first content event
  double e2e_ms = 0;          // start to the last byte of the response
  std::vector<double> itl_ms; // between content events (an event of k tokens gives k equal gaps)
  int prompt_tokens = 0;
  int output_tokens = 0;
  // usage.prompt_tokens_details.cached_tokens: the prompt tokens the server's prefix cache held; none when the
  // server did not say (or said more than prompt_tokens).
  std::optional<int> cached_tokens;
  std::map<std::string, double> server_ms;  // llmbench_timing of the final chunk, when the server sent it
  int conversation = -1;      // --turns > 1: the conversation it belongs to (from 0, in the point); else -1
  int turn = 0;               // --turns > 1: its turn in that conversation (from 1); else 0
  // (e2e - TTFT) / (output_tokens - 1); none for fewer than 2 tokens.
  std::optional<double> tpot_ms() const;
};

// Service-level objectives; a request counts toward goodput when it meets every one that is set.
struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2e_ms; }
  bool met_by(const RequestRecord& r) const;  // false for a failed request
};

// Parses "ttft_ms=200,tpot_ms=50,e2e_ms=5000" (any subset); throws UsageError on anything else.
Slo parse_slo(const std::string& text);
// The objectives as --slo takes them ("ttft_ms=500,tpot_ms=50"); "" when none.
std::string slo_text(const Slo& slo);

// A point measured by `llmbench load --search`: whether it met the goodput target, and whether it is the
// highest load that did.
struct SearchProbe {
  std::string axis;    // request_rate | concurrency
  double target = 0;   // goodput fraction the probe had to reach
  bool passed = false;
  bool best = false;   // the highest passing probe of its search
};

// What `llmbench load --server-metrics` read from the server's Prometheus /metrics page while a point ran
// (docs/load.md, "Server metrics"): the first page just before the point's first request, the last just
// after its last response, one every interval between. Series are keyed `name{label="value",...}`.
struct ServerMetrics {
  std::string url;
  double interval_ms = 0;
  int scrapes = 0;          // pages read and parsed
  int failed_scrapes = 0;   // requests that failed (connection, HTTP status, timeout)
  std::string error;        // the first failure's reason; "" when none
  int bad_lines = 0;        // lines of the pages that were not valid samples (skipped)
  int dropped_series = 0;   // series beyond kMaxServerSeries, left out
  struct Gauge {
    double mean = 0, min = 0, max = 0, last = 0;  // over the scrapes
  };
  struct Counter {
    double increase = 0, per_s = 0;  // over the point (a reset to a lower value counts from 0)
  };
  struct Histogram {
    double count = 0, sum = 0;  // observations during the point, and their sum
    std::optional<double> mean, p50, p90, p99;  // from those; quantiles interpolated in the buckets; none without any
  };
  std::map<std::string, Gauge> gauges;
  std::map<std::string, Counter> counters;
  std::map<std::string, Histogram> histograms;
};
constexpr int kMaxServerSeries = 2000;

// The `mode: "load"` part of a results point. Latency summaries live in the point's `summary`.
// What a server's usage said of its prefix cache over a point's completed requests (LoadResult::prompt_cache).
struct PromptCache {
  int requests = 0;                                // completed requests that told
  long long prompt_tokens = 0, cached_tokens = 0;  // summed over them
  std::optional<double> hit_rate;                  // cached / prompt tokens; none when they had no prompt tokens
};

// One window of a point's time (`load --slice-s`): the requests issued in it, and the output tokens that arrived
// in it.
struct TimeSlice {
  double start_s = 0, duration_s = 0;  // from the point's start; the last one ends at the last byte
  int started = 0, completed = 0, failed = 0;  // requests issued in the window (cancelled ones left out)
  std::optional<double> ttft_ms_p50, tpot_ms_p50, e2e_ms_p50;  // of those completed; none without one
  double output_tokens_per_s = 0;  // tokens whose event arrived in the window, per second of it
};
constexpr int kMaxTimeSlices = 10'000;  // a point's first 10,000 slices are kept

struct LoadResult {
  // What was asked.
  std::string endpoint;          // base URL
  std::string api = "completions";  // completions | chat
  int concurrency = 0;           // closed loop: requests in flight; 0 in open loop
  double request_rate = 0;       // open loop: offered requests/s (trace replay: its mean, 0 if it has no span); 0 in closed loop
  int max_concurrency = 0;       // open loop: cap on requests in flight; 0: none
  std::string arrival;           // poisson | constant | gamma:SHAPE | trace | trace:SPEEDUP (open loop)
  int num_requests = 0;          // 0 when bounded by duration
  double duration_s = 0;         // 0 when bounded by num_requests
  int warmup_requests = 0;
  std::string dataset = "synthetic";
  double range_ratio = 0;        // synthetic lengths spread uniformly over [L·(1−R), L·(1+R)]; 0: exact
  int prefix_len = 0;            // synthetic prompts' shared first tokens (included in params.prompt_len)
  std::optional<int> trace_block_size;  // trace:FILE: tokens per hash id; none for other datasets
  int turns = 1;                 // requests per conversation (--turns; their mean with a spread); 1: single requests
  double turns_stddev = 0;       // --turns-stddev: each conversation's turns drawn around `turns`; 0: all have `turns`
  double turn_delay_ms = 0;      // think time between an answer and its conversation's next turn (the mean with a spread)
  double turn_delay_stddev_ms = 0;  // --turn-delay-stddev-ms: each think time drawn around turn_delay_ms; 0: all equal
  std::string extra_body;        // --extra-body as compact JSON; "" when none
  std::optional<SearchProbe> search;  // a --search probe
  bool stream = true;            // false (--no-stream): whole responses, no TTFT, TPOT or ITL
  std::optional<bool> tls_verify;  // https: whether the server's certificate was checked (false: --insecure); none for http
  double timeout_s = 0;
  double cancel_rate = 0;        // --cancel-rate: percent of the requests the client abandons; 0: none
  double cancel_delay_ms = 0;    // --cancel-delay-ms: how long after it was sent
  double slice_s = 0;            // --slice-s: by_slice's window; 0: none
  Slo slo;
  // What happened.
  std::string token_count_source;  // usage | tokenizer | events (how output tokens were counted)
  bool partial = false;            // interrupted while this point ran: only the finished requests
  double elapsed_s = 0;            // first request issued to last request finished
  double achieved_rate = 0;        // requests issued per second over the issuing window
  double mean_send_lag_ms = 0;     // open loop: actual minus scheduled issue time (client overhead)
  double client_events_per_s = 0; // SSE events the client parses per second on one core (measured)
  std::optional<ServerMetrics> server_metrics;  // --server-metrics; none otherwise
  std::vector<RequestRecord> requests;  // every timed request, in issue order, failed ones included

  // Derived from `requests` by summarize_load (below); stored for readers.
  int completed = 0, failed = 0;
  int cancelled = 0;                  // abandoned by the client on purpose (--cancel-rate): neither completed nor failed
  std::map<std::string, int> errors;  // reason -> count (failures only)
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  double goodput_requests_per_s = 0, goodput_fraction = 0;
  std::map<std::string, double> server_stages_ms;  // mean per stage over the requests that carried one
  // Per turn of a multi-turn point (empty otherwise): how latency grows with the history.
  struct Turn {
    int turn = 0;  // from 1
    int completed = 0, failed = 0;
    double prompt_tokens_mean = 0;  // over the completed requests (the history so far, as the server counted it)
    std::optional<double> ttft_ms_p50, ttft_ms_mean, e2e_ms_p50;  // none without a completed request
    std::optional<double> cached_fraction;  // cached / prompt tokens of its completed requests that told; none if none did
  };
  std::vector<Turn> by_turn;
  // The server's prefix cache over the completed requests whose usage said how many prompt tokens it held
  // (cached_tokens); none when no request did.
  std::optional<PromptCache> prompt_cache;
  std::vector<TimeSlice> by_slice;  // slice_s > 0: the point's time in windows of slice_s, from its start
};

// A point that replayed a trace's arrival times (arrival "trace" or "trace:SPEEDUP").
inline bool is_trace_replay(const LoadResult& l) { return l.arrival.rfind("trace", 0) == 0; }

// A load's conversations: "4 turns", "4±1.5 turns, think 2000±500 ms"; "" for single requests.
std::string conversations_text(const LoadResult& l);

// Metrics summarised per load point (over completed requests).
const std::vector<std::string>& load_summary_metrics();
// The values of one load metric (ttft_ms, tpot_ms, e2e_ms, itl_ms) over the completed requests.
std::vector<double> load_metric_values(const LoadResult& load, const std::string& metric);
// Fills the derived fields (counts, errors, throughput, goodput, server stages) from `requests`.
void summarize_load(LoadResult& load);

// A number, or null for none (as results files write an optional figure).
nlohmann::json optional_number(const std::optional<double>& v);

// The point-level keys a load point adds to a results file, and back (Error names `path` and the key).
nlohmann::json load_to_json(const LoadResult& load);
LoadResult load_from_json(const nlohmann::json& point, const std::string& path);

}  // namespace llmbench
