#include "llmbench/load/runner.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/load/arrival.h"
#include "llmbench/load/client.h"
#include "llmbench/load/dataset.h"
#include "llmbench/load/draw.h"
#include "llmbench/load/server_metrics.h"
#include "llmbench/load/server_process.h"
#include "llmbench/load/sse.h"
#include "llmbench/load/turns.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

namespace asio = boost::asio;
using nlohmann::json;

constexpr int kDefaultRequests = 100;
constexpr int kPromptPoolForDuration = 256;  // prompts cycled through when the run is bounded by time
// Sizes beyond any real load test, refused up front rather than found out after minutes or an OOM.
constexpr int kMaxRequests = 1'000'000;        // --num-requests, --warmup-requests, rate x duration
constexpr int kMaxTokens = 1 << 24;            // --input-len, --output-len (16.8 M tokens)
constexpr long long kMaxPromptTokens = 50'000'000;  // synthetic prompt tokens made up front (~200 MB of text)
constexpr double kMaxSeconds = 1e6;            // --timeout-s, --duration (11.6 days)
constexpr double kMinRate = 1e-3, kMaxRate = 1e6;  // --request-rate, per second
constexpr double kModelsTimeoutS = 30;         // GET /v1/models, at most (else --timeout-s)
constexpr std::size_t kMaxExtraBodyBytes = 64 * 1024;  // --extra-body
constexpr double kMinClientEventsPerS = 50'000;  // SSE events/s the client parses; fewer: a warning
constexpr double kMinTraceSpeedup = 1e-3, kMaxTraceSpeedup = 1e3;  // --trace-speedup
constexpr int kMaxTraceBlockSize = 1 << 20;    // --trace-block-size
constexpr double kMinScrapeMs = 10, kMaxScrapeMs = 60'000;  // --server-metrics-interval-ms
constexpr double kMinSliceS = 1e-3;            // --slice-s
constexpr double kMaxTurnDelayMs = 3.6e6;      // --turn-delay-ms and --turn-delay-stddev-ms (an hour)

namespace {
// trace:FILE and no load of our own: the trace's arrival times are the schedule.
bool replays_trace(const LoadOptions& o) {
  return parse_dataset(o.dataset).kind == "trace" && o.concurrency.empty() && o.request_rate.empty() && o.search.empty();
}

TurnSpread turn_spread(const LoadOptions& o) {
  return {std::max(o.turns, 1), o.turns_stddev, o.turn_delay_ms, o.turn_delay_stddev_ms, o.seed};
}

// Requests per point without --num-requests or --duration: 100, rounded down to whole conversations of
// --turns (at least one); with a spread of turns 100 (the last conversation cut short to fit).
int default_requests(const LoadOptions& o) {
  if (o.turns_stddev > 0) return kDefaultRequests;
  const int turns = std::max(o.turns, 1);
  return std::max(1, kDefaultRequests / turns) * turns;
}

// Whether request `index` of a point is one the client abandons (--cancel-rate): a draw of (seed, index), so
// the same requests of every point and run.
constexpr std::uint32_t kCancelDraws = 0x63616e63;  // "canc": these draws' own stream
bool cancels(double rate_percent, std::uint64_t seed, std::size_t index) {
  return rate_percent > 0 && uniform_draw(seed, kCancelDraws, static_cast<std::uint32_t>(index)) * 100 < rate_percent;
}

// What a load of `requests` requests counts: conversations (--turns 2 or more) or requests.
int units_of(const LoadOptions& o, int requests) {
  return o.turns > 1 ? static_cast<int>(turns_for_requests(turn_spread(o), requests).size()) : requests;
}
}  // namespace

std::string request_body(const std::string& api, const std::string& model, const std::string& prompt, int output_len,
                         const json& extra, bool stream, const json& line_extra) {
  return turn_body(api, model, {prompt}, output_len, extra, stream, line_extra);
}

std::string messages_body(const std::string& model, const json& messages, int output_len, const json& extra, bool stream,
                          const json& line_extra) {
  json j = json::parse(turn_body("chat", model, {""}, output_len, nullptr, stream));
  j["messages"] = messages;
  if (extra.is_object()) j.merge_patch(extra);
  if (line_extra.is_object()) j.merge_patch(line_extra);
  return j.dump();
}

std::string turn_body(const std::string& api, const std::string& model, const std::vector<std::string>& history,
                      int output_len, const json& extra, bool stream, const json& line_extra) {
  json j = {{"model", model},          {"max_tokens", output_len},
            {"min_tokens", output_len}, {"ignore_eos", true},
            {"temperature", 0},         {"stream", stream}};
  if (stream) j["stream_options"] = {{"include_usage", true}};
  if (api == "chat") {
    json messages = json::array();
    for (std::size_t i = 0; i < history.size(); ++i)
      messages.push_back({{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", history[i]}});
    j["messages"] = std::move(messages);
  } else {
    std::string prompt;
    for (const auto& text : history) prompt += text;
    j["prompt"] = std::move(prompt);
  }
  if (extra.is_object()) j.merge_patch(extra);  // RFC 7396: null removes a field
  if (line_extra.is_object()) j.merge_patch(line_extra);
  return j.dump();
}

json parse_extra_body(const std::string& text) {
  if (text.empty()) return nullptr;
  if (text.size() > kMaxExtraBodyBytes)
    throw UsageError(cat("--extra-body: ", text.size(), " bytes, more than ", kMaxExtraBodyBytes));
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw UsageError("--extra-body: expected a JSON object, e.g. '{\"top_k\": 20}'");
  if (j.empty()) return nullptr;  // changes nothing: the same point as without it
  for (const char* key : {"model", "prompt", "messages", "stream"})
    if (j.contains(key))
      throw UsageError(cat("--extra-body: '", key, "' is set by llmbench load (",
                           std::string(key) == "model" ? "give --model" : std::string(key) == "stream" ? "use --no-stream" : "the dataset gives it", ")"));
  return j;
}

std::optional<SearchSpec> parse_search(const LoadOptions& o) {
  if (o.search.empty()) {
    if (o.search_goodput != LoadOptions{}.search_goodput || o.search_steps != LoadOptions{}.search_steps)
      throw UsageError("--search-goodput and --search-steps only apply with --search");
    return std::nullopt;
  }
  const std::string usage = cat("--search '", o.search, "': expected rate:MIN:MAX or concurrency:MIN:MAX");
  const auto a = o.search.find(':'), b = a == std::string::npos ? a : o.search.find(':', a + 1);
  if (b == std::string::npos) throw UsageError(usage);
  SearchSpec s;
  const std::string axis = o.search.substr(0, a);
  if (axis != "rate" && axis != "concurrency") throw UsageError(usage);
  s.axis = axis == "rate" ? "request_rate" : "concurrency";
  auto number = [&](const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      throw UsageError(usage);
    }
    if (used != text.size() || !std::isfinite(v)) throw UsageError(usage);
    return v;
  };
  s.min = number(o.search.substr(a + 1, b - a - 1));
  s.max = number(o.search.substr(b + 1));
  if (s.axis == "request_rate") {
    if (!(s.min >= kMinRate && s.max <= kMaxRate && s.min < s.max))
      throw UsageError(cat("--search: rates must satisfy ", shown(kMinRate), " <= MIN < MAX <= ", shown(kMaxRate), ", got ", shown(s.min), " and ", shown(s.max)));
  } else if (!(s.min >= 1 && s.max <= kMaxRequests && s.min < s.max && s.min == std::floor(s.min) && s.max == std::floor(s.max))) {
    throw UsageError(cat("--search: concurrencies must be integers with 1 <= MIN < MAX <= ", kMaxRequests, ", got ", s.min,
                         " and ", s.max));
  }
  if (!(o.search_goodput > 0 && o.search_goodput <= 1))
    throw UsageError(cat("--search-goodput must be in (0, 1], got ", o.search_goodput));
  if (o.search_steps < 1 || o.search_steps > 20) throw UsageError(cat("--search-steps must be in [1, 20], got ", o.search_steps));
  if (o.slo.empty()) throw UsageError("--search needs --slo: it looks for the highest load whose goodput meets the target");
  if (!o.concurrency.empty() || !o.request_rate.empty())
    throw UsageError("--search chooses the load itself: leave out --concurrency and --request-rate");
  // A cap holds arrivals in the client, where their wait is not in TTFT (it counts from the send): every
  // rate would look sustainable.
  if (o.max_concurrency > 0) throw UsageError("--search does not combine with --max-concurrency (queued arrivals would never miss the SLO)");
  // 5: the same bound on requests per point as --request-rate with --duration.
  if (s.axis == "request_rate" && s.max * o.duration_s > kMaxRequests)
    throw UsageError(cat("--search rate up to ", s.max, "/s for --duration ", o.duration_s, " s is ", s.max * o.duration_s,
                         " requests per point, more than ", kMaxRequests));
  const int units = units_of(o, o.num_requests > 0 ? o.num_requests : default_requests(o));
  if (s.axis == "concurrency" && o.duration_s == 0 && s.max > units)
    throw UsageError(cat("--search concurrency up to ", s.max, " with ", units, o.turns > 1 ? " conversations" : " requests",
                         " per probe never has ", s.max, " in flight (more --num-requests, a lower MAX, or --duration)"));
  s.target = o.search_goodput;
  s.steps = o.search_steps;
  return s;
}

namespace {

std::string percent1(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

}  // namespace

std::string api_key_of(const LoadOptions& o) {
  if (o.api_key_env.empty()) return o.api_key;
  if (!o.api_key.empty()) throw UsageError("--api-key and --api-key-env exclude each other");
  const char* value = std::getenv(o.api_key_env.c_str());
  if (!value || !*value) throw UsageError(cat("--api-key-env ", o.api_key_env, ": the variable is not set, or empty"));
  return value;
}

void validate(const LoadOptions& o) {
  if (!o.endpoint.empty()) parse_endpoint(o.endpoint);
  if ((!o.ca_cert.empty() || o.insecure) && o.endpoint.rfind("https://", 0) != 0)
    throw UsageError("--ca-cert and --insecure are for an https:// --endpoint");
  if (!o.ca_cert.empty() && !std::ifstream(o.ca_cert)) throw UsageError(cat("--ca-cert ", o.ca_cert, ": cannot read the file"));
  if (o.api != "completions" && o.api != "chat") throw UsageError(cat("--api '", o.api, "': expected completions or chat"));
  if (!o.concurrency.empty() && !o.request_rate.empty())
    throw UsageError("--concurrency and --request-rate exclude each other (closed or open loop)");
  for (int c : o.concurrency)
    if (c < 1 || c > kMaxRequests) throw UsageError(cat("--concurrency must be in [1, ", kMaxRequests, "], got ", c));
  // A value given twice would be two identical points, which gate cannot tell apart.
  for (std::size_t i = 0; i < o.concurrency.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (o.concurrency[k] == o.concurrency[i]) throw UsageError(cat("--concurrency lists ", o.concurrency[i], " twice"));
  for (std::size_t i = 0; i < o.request_rate.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (o.request_rate[k] == o.request_rate[i])
        throw UsageError(cat("--request-rate lists ", shown(o.request_rate[i]), " twice"));
  if (o.num_requests < 0 || o.num_requests > kMaxRequests)
    throw UsageError(cat("--num-requests must be in [1, ", kMaxRequests, "], got ", o.num_requests));
  if (o.turns < 1 || o.turns > kMaxTurns) throw UsageError(cat("--turns must be in [1, ", kMaxTurns, "], got ", o.turns));
  if (!(o.turn_delay_ms >= 0 && o.turn_delay_ms <= kMaxTurnDelayMs))
    throw UsageError(cat("--turn-delay-ms must be in [0, ", shown(kMaxTurnDelayMs), "], got ", shown(o.turn_delay_ms)));
  if (o.turns == 1 && o.turn_delay_ms > 0) throw UsageError("--turn-delay-ms is the think time between turns: for --turns 2 or more");
  if (!(o.turns_stddev >= 0 && o.turns_stddev <= kMaxTurns))
    throw UsageError(cat("--turns-stddev must be in [0, ", kMaxTurns, "], got ", shown(o.turns_stddev)));
  if (o.turns == 1 && o.turns_stddev > 0)
    throw UsageError("--turns-stddev spreads the turns of conversations around --turns: for --turns 2 or more");
  if (!(o.turn_delay_stddev_ms >= 0 && o.turn_delay_stddev_ms <= kMaxTurnDelayMs))
    throw UsageError(cat("--turn-delay-stddev-ms must be in [0, ", shown(kMaxTurnDelayMs), "], got ", shown(o.turn_delay_stddev_ms)));
  if (o.turns == 1 && o.turn_delay_stddev_ms > 0)
    throw UsageError("--turn-delay-stddev-ms spreads the think time between turns: for --turns 2 or more");
  if (o.turns > 1 && replays_trace(o))
    throw UsageError("--turns: a trace replay sends each line as one request at its own time (with --concurrency or "
                     "--request-rate the trace's prompts make up conversations)");
  if (o.turns > 1 && o.max_concurrency > 0)
    throw UsageError("--max-concurrency does not combine with --turns (a load of conversations is --concurrency, the "
                     "conversations under way, or --request-rate, those started per second)");
  if (o.turns > 1 && o.turns_stddev == 0 && o.num_requests % o.turns != 0)
    throw UsageError(cat("--num-requests ", o.num_requests, " is not a whole number of conversations of --turns ", o.turns));
  // A closed loop of C needs at least C requests (conversations), or it never has C in flight (nor does a
  // search probe).
  const int units = units_of(o, o.num_requests > 0 ? o.num_requests : default_requests(o));
  if (o.duration_s == 0)
    for (int c : o.concurrency)
      if (c > units)
        throw UsageError(cat("--concurrency ", c, " with ", units, o.turns > 1 ? " conversations" : " requests", " never has ", c,
                             " in flight (more --num-requests, or --duration)"));
  if (o.max_concurrency < 0 || o.max_concurrency > kMaxRequests)
    throw UsageError(cat("--max-concurrency must be in [1, ", kMaxRequests, "], got ", o.max_concurrency));
  parse_search(o);
  const bool trace = parse_dataset(o.dataset).kind == "trace";
  if (o.max_concurrency > 0 && o.request_rate.empty() && o.search.empty() && !replays_trace(o))
    throw UsageError("--max-concurrency caps an open loop (--request-rate or a trace replay); a closed loop is --concurrency");
  if (!(o.trace_speedup >= kMinTraceSpeedup && o.trace_speedup <= kMaxTraceSpeedup))
    throw UsageError(cat("--trace-speedup must be in [", shown(kMinTraceSpeedup), ", ", shown(kMaxTraceSpeedup), "], got ", shown(o.trace_speedup)));
  if (o.trace_block_size < 1 || o.trace_block_size > kMaxTraceBlockSize)
    throw UsageError(cat("--trace-block-size must be in [1, ", kMaxTraceBlockSize, "], got ", o.trace_block_size));
  if (!trace && (o.trace_speedup != LoadOptions{}.trace_speedup || o.trace_block_size != LoadOptions{}.trace_block_size))
    throw UsageError("--trace-speedup and --trace-block-size are for --dataset trace:FILE");
  if (trace && !replays_trace(o) && o.trace_speedup != LoadOptions{}.trace_speedup)
    throw UsageError("--trace-speedup scales a replay's arrival times; with --concurrency, --request-rate or --search "
                     "the trace gives its prompts only");
  for (std::size_t i = 0; i < o.server_metrics_urls.size(); ++i) {
    parse_endpoint(o.server_metrics_urls[i]);
    for (std::size_t k = 0; k < i; ++k)
      if (o.server_metrics_urls[k] == o.server_metrics_urls[i])
        throw UsageError(cat("--server-metrics-url lists ", o.server_metrics_urls[i], " twice"));
  }
  if (!(o.server_metrics_interval_ms >= kMinScrapeMs && o.server_metrics_interval_ms <= kMaxScrapeMs))
    throw UsageError(cat("--server-metrics-interval-ms must be in [", kMinScrapeMs, ", ", kMaxScrapeMs, "], got ",
                         shown(o.server_metrics_interval_ms)));
  if (!o.server_metrics && o.server_metrics_urls.empty() &&
      o.server_metrics_interval_ms != LoadOptions{}.server_metrics_interval_ms)
    throw UsageError("--server-metrics-interval-ms is for --server-metrics");
  if (replays_trace(o) && o.arrival != LoadOptions{}.arrival)
    throw UsageError("--arrival: a trace replay sends each request at the trace's own time (--request-rate uses --arrival)");
  for (double r : o.request_rate)
    if (!(r >= kMinRate && r <= kMaxRate))
      throw UsageError(cat("--request-rate must be in [", shown(kMinRate), ", ", shown(kMaxRate), "] requests per second, got ", shown(r)));
  parse_arrival(o.arrival);
  if (!(o.duration_s >= 0 && o.duration_s <= kMaxSeconds))
    throw UsageError(cat("--duration must be a positive number of seconds up to ", shown(kMaxSeconds), ", got ", shown(o.duration_s)));
  if (o.num_requests > 0 && o.duration_s > 0) throw UsageError("--num-requests and --duration exclude each other");
  for (double r : o.request_rate)
    if (r * o.duration_s * std::max(o.turns, 1) > kMaxRequests)
      throw UsageError(cat("--request-rate ", r, " for --duration ", o.duration_s, " s is ", r * o.duration_s * std::max(o.turns, 1),
                           " requests per point, more than ", kMaxRequests));
  if (o.warmup_requests < 0 || o.warmup_requests > kMaxRequests)
    throw UsageError(cat("--warmup-requests must be in [0, ", kMaxRequests, "], got ", o.warmup_requests));
  if (o.input_len < 1 || o.input_len > kMaxTokens)
    throw UsageError(cat("--input-len must be in [1, ", kMaxTokens, "], got ", o.input_len));
  if (o.output_len < 1 || o.output_len > kMaxTokens)
    throw UsageError(cat("--output-len must be in [1, ", kMaxTokens, "], got ", o.output_len));
  if (!(o.range_ratio >= 0 && o.range_ratio < 1))
    throw UsageError(cat("--range-ratio must be in [0, 1), got ", o.range_ratio));
  if (o.range_ratio > 0 && parse_dataset(o.dataset).kind != "synthetic")
    throw UsageError("--range-ratio spreads synthetic lengths; a dataset brings its own");
  if (o.prefix_len < 0 || o.prefix_len > kMaxTokens)
    throw UsageError(cat("--prefix-len must be in [0, ", kMaxTokens, "], got ", o.prefix_len));
  if (o.prefix_len > 0 && parse_dataset(o.dataset).kind != "synthetic")
    throw UsageError("--prefix-len prefixes synthetic prompts; a dataset brings its own");
  for (const auto& [flag, len] : {std::pair<const char*, int>{"--input-len", o.input_len}, {"--output-len", o.output_len}})
    if (length_range(len, o.range_ratio).second > kMaxTokens)
      throw UsageError(cat(flag, " ", len, " with --range-ratio ", o.range_ratio, " reaches ",
                           length_range(len, o.range_ratio).second, " tokens, more than ", kMaxTokens));
  if (o.prefix_len > 0 && o.prefix_len + static_cast<long long>(length_range(o.input_len, o.range_ratio).second) > kMaxTokens)
    throw UsageError(cat("--prefix-len ", o.prefix_len, " + --input-len ", o.input_len, " make prompts of up to ",
                         o.prefix_len + static_cast<long long>(length_range(o.input_len, o.range_ratio).second),
                         " tokens, more than ", kMaxTokens));
  if (!(o.timeout_s > 0 && o.timeout_s <= kMaxSeconds))
    throw UsageError(cat("--timeout-s must be a positive number of seconds up to ", shown(kMaxSeconds), ", got ", shown(o.timeout_s)));
  if (!(o.cancel_rate >= 0 && o.cancel_rate <= 100))
    throw UsageError(cat("--cancel-rate must be a percent of the requests in [0, 100], got ", shown(o.cancel_rate)));
  if (!(o.cancel_delay_ms >= 0 && o.cancel_delay_ms < o.timeout_s * 1e3))
    throw UsageError(cat("--cancel-delay-ms must be in [0, --timeout-s) (", shown(o.timeout_s * 1e3), " ms), got ",
                         shown(o.cancel_delay_ms)));
  if (!(o.slice_s == 0 || (o.slice_s >= kMinSliceS && o.slice_s <= kMaxSeconds)))
    throw UsageError(cat("--slice-s must be 0 (none) or seconds in [", shown(kMinSliceS), ", ", shown(kMaxSeconds), "], got ",
                         shown(o.slice_s)));
  if (o.slice_s > 0 && o.duration_s / o.slice_s > kMaxTimeSlices)
    throw UsageError(cat("--slice-s ", shown(o.slice_s), " cuts --duration ", shown(o.duration_s), " s into more than ",
                         kMaxTimeSlices, " slices"));
  if (o.cancel_rate == 0 && o.cancel_delay_ms > 0)
    throw UsageError("--cancel-delay-ms is when a cancelled request is abandoned: for --cancel-rate above 0");
  // A dataset file that cannot be read fails here, before any work (compare checks every target so).
  if (const DatasetSpec ds = parse_dataset(o.dataset); ds.kind != "synthetic") {
    std::error_code ec;
    if (std::filesystem::is_directory(ds.path, ec)) throw UsageError(cat("--dataset: ", ds.path, " is a directory"));
    if (::access(ds.path.c_str(), R_OK) != 0)
      throw UsageError(cat("--dataset: ", ds.path, ": cannot open: ", std::strerror(errno)));
  }
  if (parse_dataset(o.dataset).kind == "synthetic") {
    const long long prompts = o.warmup_requests + (o.duration_s > 0    ? kPromptPoolForDuration
                                                   : o.num_requests > 0 ? o.num_requests
                                                                        : default_requests(o));
    const long long longest = o.prefix_len + static_cast<long long>(length_range(o.input_len, o.range_ratio).second);
    if (prompts * longest > kMaxPromptTokens)
      throw UsageError(cat(prompts, " synthetic prompts (",
                           o.duration_s > 0 ? cat("the ", kPromptPoolForDuration, " that --duration cycles through")
                                            : std::string("--num-requests"),
                           " + --warmup-requests) of up to ", longest, " tokens (--input-len",
                           o.range_ratio > 0 ? ", --range-ratio" : "", o.prefix_len > 0 ? ", --prefix-len" : "",
                           ") are up to ", prompts * longest, " tokens, more than ", kMaxPromptTokens,
                           o.duration_s > 0 ? std::string(" (shorter prompts)")
                                            : cat(" (fewer requests, or --duration, which cycles through ",
                                                  kPromptPoolForDuration, " prompts)")));
  }
  // A replay's warm-ups are synthetic prompts of --input-len tokens (made up front like the others).
  if (replays_trace(o) && static_cast<long long>(o.warmup_requests) * o.input_len > kMaxPromptTokens)
    throw UsageError(cat(o.warmup_requests, " warm-up prompts of ", o.input_len, " tokens (--warmup-requests, --input-len) are ",
                         static_cast<long long>(o.warmup_requests) * o.input_len, " tokens, more than ", kMaxPromptTokens));
  if (!o.slo.empty()) parse_slo(o.slo);
  auto breaks_header = [](const std::string& s) { return s.find_first_of(std::string("\r\n\0", 3)) != std::string::npos; };
  for (const auto& h : o.headers) {
    const auto colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || breaks_header(h))
      throw UsageError(cat("--header '", h, "': expected KEY:VALUE"));
    // RFC 9110 5.1: a field name is a token; a space or parenthesis would make every request a 400.
    const std::string name = h.substr(0, colon);
    for (unsigned char ch : name)
      if (!std::isalnum(ch) && std::string("!#$%&'*+-.^_`|~").find(char(ch)) == std::string::npos)
        throw UsageError(cat("--header '", h, "': '", name, "' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"));
  }
  parse_extra_body(o.extra_body);
  if (o.no_stream && !o.slo.empty() && (parse_slo(o.slo).ttft_ms || parse_slo(o.slo).tpot_ms))
    throw UsageError("--no-stream: a response arrives whole, so it has no TTFT or TPOT to hold to --slo (use e2e_ms)");
  if (breaks_header(api_key_of(o)))
    throw UsageError(cat(o.api_key_env.empty() ? "--api-key" : "--api-key-env " + o.api_key_env,
                         ": contains a line break or NUL (it goes into a header)"));
  if (o.endpoint.empty() && o.serve_command.empty()) throw UsageError("no --endpoint and no server to start");
}

namespace {

double ms_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - t0).count();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// One turn of a trace's session: its prompt (a new user turn after the history) or its messages (sent as
// they are), and when it goes after the answer before it.
struct ScriptTurn {
  LoadPrompt prompt;
  std::string messages;         // JSON array; "" for a prompt
  bool delta = false;           // messages are the turn's new ones: after the history with the live answers
  std::optional<double> at_ms;  // not before this (the trace's timestamp, from the replay's start)
  double delay_ms = 0;          // without at_ms: this long after the answer
};
struct Script {
  std::vector<ScriptTurn> turns;
  int session = -1;  // the trace's session (its records' conversation); -1: a line alone (a plain request)
};

// What one drive() call should do: a closed loop of `concurrency`, or open-loop `arrivals`.
struct Schedule {
  int concurrency = 0;             // closed loop when > 0
  std::vector<double> arrivals_s;  // open loop
  int max_in_flight = 0;           // open loop: 0 = no cap; else arrivals beyond it wait for a finish
  int max_requests = 0;            // closed loop: 0 = bounded by duration
  double duration_s = 0;
  // These prompts in order from the first (a trace replay, its warm-ups); null: the driver's, cycled on.
  const std::vector<LoadPrompt>* prompts = nullptr;
  // spread.turns > 1: each issue starts a conversation (max_requests and arrivals_s count conversations) of
  // plan[id] requests (past the plan, or without one: drawn); the next turn goes a think time after the
  // answer to the last.
  TurnSpread spread;
  std::vector<int> plan;
  // --cancel-rate: request i of the point is abandoned cancel_delay_ms after it was sent when its draw says so.
  double cancel_rate = 0, cancel_delay_ms = 0;
  std::uint64_t seed = 0;
  // A replay of a trace with sessions: arrival i starts scripts[i] (a line alone is a script of one turn).
  const std::vector<Script>* scripts = nullptr;
};

struct Drive {
  std::vector<RequestRecord> records;
  std::set<std::string> counted_by;
  bool stopped = false;
};

// Runs one schedule to the end on the calling thread; requests cancelled by a stop are dropped.
class Driver {
 public:
  Driver(asio::io_context& io, LoadClient& client, const std::string& path, const std::string& api,
         const std::string& model, json extra, bool stream, const std::vector<LoadPrompt>& prompts,
         std::function<bool()> should_stop)
      : io_(io), client_(client), path_(path), api_(api), model_(model), extra_(std::move(extra)), stream_(stream),
        prompts_(prompts),
        should_stop_(std::move(should_stop)) {}

  Drive run(const Schedule& s) {
    schedule_ = s;
    slots_.clear();
    result_ = Drive{};
    issued_ = 0;
    next_arrival_ = 0;
    own_cursor_ = 0;
    waiting_.clear();
    conversations_.clear();
    thinking_.clear();
    next_conversation_ = 0;
    io_.restart();
    asio::steady_timer arrivals(io_), watch(io_);
    arrivals_ = &arrivals;
    watch_ = &watch;
    t0_ = Clock::now();
    if (s.concurrency > 0) {
      // The first wave goes out at time 0 whatever the duration: a point always has requests.
      for (int i = 0; i < s.concurrency && (s.max_requests == 0 || issued_ < s.max_requests); ++i)
        issue(ms_since(t0_, Clock::now()));
    } else {
      schedule_next();
    }
    poll();
    check_done();
    io_.run();
    for (auto& r : slots_)
      if (r && r->error != "cancelled") result_.records.push_back(std::move(*r));
    conversations_.clear();
    return std::move(result_);
  }

 private:
  bool may_issue() const {
    if (result_.stopped) return false;
    if (schedule_.concurrency == 0) return next_arrival_ < schedule_.arrivals_s.size();
    if (schedule_.max_requests > 0) return issued_ < schedule_.max_requests;
    return ms_since(t0_, Clock::now()) < schedule_.duration_s * 1e3;
  }

  // A conversation between its turns: the history so far (user, assistant, ...).
  struct Conversation {
    const Script* script = nullptr;  // a trace's session; null: --turns of the driver's prompts
    int turn = 0;  // turns sent
    std::vector<std::string> history;
    nlohmann::json messages = nlohmann::json::array();  // a delta session's history: its messages and the answers
    int history_tokens = 0;  // prompt tokens of the history, as far as the prompts' and answers' counts tell
  };

  // One arrival: a request, or the first turn of a new conversation.
  void issue(double scheduled_ms) {
    ++issued_;
    if (schedule_.spread.turns <= 1 && !schedule_.scripts) return send(scheduled_ms, -1);
    const int id = next_conversation_++;
    if (schedule_.scripts)
      conversations_[id].script = &(*schedule_.scripts)[static_cast<std::size_t>(id) % schedule_.scripts->size()];
    else conversations_[id];
    send(scheduled_ms, id);
  }

  // Sends the next request: of conversation `id` (its next turn, with its history), or alone (id -1).
  void send(double scheduled_ms, int id) {
    const std::size_t index = slots_.size();
    slots_.emplace_back();
    const Script* script = id >= 0 ? conversations_.at(id).script : nullptr;
    const ScriptTurn* step = script ? &script->turns[static_cast<std::size_t>(conversations_.at(id).turn)] : nullptr;
    const LoadPrompt& p = step                ? step->prompt
                          : schedule_.prompts ? (*schedule_.prompts)[own_cursor_++ % schedule_.prompts->size()]
                                              : prompts_[cursor_++ % prompts_.size()];
    const auto start = Clock::now();
    const double start_ms = ms_since(t0_, start);
    const json line_extra = p.extra.empty() ? json(nullptr) : json::parse(p.extra);
    int turn = 0, prompt_tokens = p.prompt_tokens;
    std::string body;
    if (id < 0) {
      body = request_body(api_, model_, p.text, p.output_len, extra_, stream_, line_extra);
    } else {
      Conversation& c = conversations_.at(id);
      turn = ++c.turn;
      if (step && step->delta) {
        for (auto& m : json::parse(step->messages)) c.messages.push_back(std::move(m));
        body = messages_body(model_, c.messages, p.output_len, extra_, stream_, line_extra);
        prompt_tokens = p.prompt_tokens > 0 ? c.history_tokens + p.prompt_tokens : 0;
        c.history_tokens += p.prompt_tokens;
      } else if (step && !step->messages.empty()) {
        body = messages_body(model_, json::parse(step->messages), p.output_len, extra_, stream_, line_extra);
      } else {
        c.history.push_back(p.text);
        body = turn_body(api_, model_, c.history, p.output_len, extra_, stream_, line_extra);
        prompt_tokens = p.prompt_tokens > 0 ? c.history_tokens + p.prompt_tokens : 0;
        c.history_tokens += p.prompt_tokens;
      }
    }
    std::optional<double> cancel_after_ms;
    if (cancels(schedule_.cancel_rate, schedule_.seed, index)) cancel_after_ms = schedule_.cancel_delay_ms;
    client_.post(path_, std::move(body), start,
                 [this, index, start_ms, scheduled_ms, prompt_tokens, id, turn, script](RequestRecord r, const std::string& by,
                                                                                std::string text) {
                   r.start_ms = start_ms;
                   r.scheduled_ms = scheduled_ms;
                   if (r.prompt_tokens == 0) r.prompt_tokens = prompt_tokens;
                   if (!by.empty()) result_.counted_by.insert(by);
                   if (id >= 0 && (!script || script->session >= 0)) {  // a line alone is a plain request
                     r.conversation = id;
                     r.turn = turn;
                   }
                   const bool ok = r.ok;
                   const int output_tokens = r.output_tokens;
                   slots_[index] = std::move(r);
                   // A conversation goes on after an answer (a failed turn ends it: its history would be wrong).
                   // (A cap's waiting arrivals go on below either way: a session's later turns are not held.)
                   if (id >= 0 && ok && turn < turns_of(id) && !result_.stopped) {
                     Conversation& c = conversations_.at(id);
                     if (script && script->turns.front().delta) c.messages.push_back({{"role", "assistant"}, {"content", text}});
                     c.history.push_back(std::move(text));
                     c.history_tokens += output_tokens;
                     next_turn(id);
                   } else {
                     if (id >= 0) conversations_.erase(id);
                     if (schedule_.concurrency > 0 && may_issue()) issue(ms_since(t0_, Clock::now()));
                   }
                   // --duration: arrivals still held by the cap when it ends are not sent (the point ends
                   // when nothing more is issued after S seconds).
                   if (schedule_.duration_s > 0 && ms_since(t0_, Clock::now()) >= schedule_.duration_s * 1e3) waiting_.clear();
                   if (schedule_.concurrency == 0 && !waiting_.empty() && !result_.stopped &&
                       client_.in_flight() < schedule_.max_in_flight) {
                     const double arrived_ms = waiting_.front();  // the oldest arrival held by the cap
                     waiting_.pop_front();
                     issue(arrived_ms);
                   }
                   check_done();
                 },
                 cancel_after_ms);
  }

  int turns_of(int id) const {
    const Script* script = conversations_.at(id).script;
    if (script) return static_cast<int>(script->turns.size());
    return static_cast<std::size_t>(id) < schedule_.plan.size() ? schedule_.plan[static_cast<std::size_t>(id)]
                                                                : conversation_turns(schedule_.spread, id);
  }

  // The next turn of conversation `id`, after the think time (a trace's: its delay, or its timestamp).
  void next_turn(int id) {
    const Conversation& c = conversations_.at(id);
    const double now_ms = ms_since(t0_, Clock::now());
    double delay_ms = think_time_ms(schedule_.spread, id, c.turn + 1);
    if (c.script) {
      const ScriptTurn& next = c.script->turns[static_cast<std::size_t>(c.turn)];
      delay_ms = next.at_ms ? std::max(0.0, *next.at_ms - now_ms) : next.delay_ms;
    }
    const double at_ms = now_ms + delay_ms;
    if (delay_ms <= 0) return send(at_ms, id);
    auto timer = std::make_unique<asio::steady_timer>(io_);
    timer->expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(delay_ms)));
    timer->async_wait([this, id, at_ms](const boost::system::error_code& ec) {
      if (ec) return;  // stopped: the timer is gone
      thinking_.erase(id);
      send(at_ms, id);
    });
    thinking_[id] = std::move(timer);
  }

  void schedule_next() {
    if (!may_issue()) return check_done();
    arrivals_->expires_at(t0_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(schedule_.arrivals_s[next_arrival_])));
    arrivals_->async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      const double now_s = ms_since(t0_, Clock::now()) / 1e3;
      while (may_issue() && schedule_.arrivals_s[next_arrival_] <= now_s) {
        const double arrived_ms = schedule_.arrivals_s[next_arrival_++] * 1e3;
        // --max-concurrency: an arrival beyond the cap waits, in order, for a request to finish (its
        // wait shows in the send lag, not in its TTFT, as with vLLM's --max-concurrency).
        if (schedule_.max_in_flight > 0 && (client_.in_flight() >= schedule_.max_in_flight || !waiting_.empty()))
          waiting_.push_back(arrived_ms);
        else
          issue(arrived_ms);
      }
      schedule_next();
    });
  }

  void poll() {
    watch_->expires_after(std::chrono::milliseconds(50));
    watch_->async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      if (should_stop_ && should_stop_()) {
        result_.stopped = true;
        waiting_.clear();
        for (auto& [id, timer] : thinking_) timer->cancel();
        thinking_.clear();
        arrivals_->cancel();
        client_.cancel_all();
        check_done();
        return;
      }
      // cancel() cannot recall an expiry already queued: a wait that expired as the last request finished
      // still runs here with success, and re-arming it then kept io_.run() going forever.
      if (done()) return;
      poll();
    });
  }

  bool done() const { return client_.in_flight() == 0 && waiting_.empty() && thinking_.empty() && !may_issue(); }

  void check_done() {
    if (done()) {
      watch_->cancel();
      arrivals_->cancel();
    }
  }

  asio::io_context& io_;
  LoadClient& client_;
  std::string path_, api_, model_;
  json extra_;  // --extra-body, merged into every request
  bool stream_;  // false: --no-stream
  const std::vector<LoadPrompt>& prompts_;
  std::function<bool()> should_stop_;
  Schedule schedule_;
  std::vector<std::optional<RequestRecord>> slots_;
  Drive result_;
  int issued_ = 0;
  std::size_t next_arrival_ = 0, cursor_ = 0, own_cursor_ = 0;
  std::deque<double> waiting_;  // open loop with a cap: arrival times (ms) not yet issued
  int next_conversation_ = 0;   // the next conversation's id (from 0 in each run)
  std::map<int, Conversation> conversations_;  // under way
  std::map<int, std::unique_ptr<asio::steady_timer>> thinking_;  // conversations waiting for their next turn
  Clock::time_point t0_;
  asio::steady_timer* arrivals_ = nullptr;
  asio::steady_timer* watch_ = nullptr;
};

std::string first_model(const Endpoint& endpoint, const std::vector<std::pair<std::string, std::string>>& headers,
                        double timeout_s, const std::function<bool()>& should_stop, const TlsOptions& tls) {
  const auto [status, body] = http_get(endpoint, "/v1/models", timeout_s, headers, should_stop, tls);
  if (status == 401 || status == 403)  // the lookup is the first request: a key is what it lacks, not a model name
    throw Error(cat("GET ", endpoint.url(), "/v1/models: HTTP ", status, " (give --api-key)"));
  if (status != 200) throw Error(cat("GET ", endpoint.url(), "/v1/models: HTTP ", status, " (give --model)"));
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].is_object() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    throw Error(cat("GET ", endpoint.url(), "/v1/models: no model listed (give --model)"));
  std::string id = j["data"][0]["id"].get<std::string>();
  // It names the points and goes into every request and table: not empty, no control characters.
  if (id.empty() || std::any_of(id.begin(), id.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    throw Error(cat("GET ", endpoint.url(), "/v1/models: the first model id '", id,
                    "' is empty or has control characters (give --model)"));
  return id;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

bool is_directory_like(const std::string& s) { return s == "tiny" || (!s.empty() && ::access(s.c_str(), R_OK) == 0); }

// "every request failed: http_400 x3 (first: "min_tokens is not supported"), timeout x1", the commonest reason
// first, with the server's message of its first request that had one.
std::string all_failed_message(const std::map<std::string, int>& errors, const std::vector<RequestRecord>& requests) {
  std::vector<std::pair<std::string, int>> by_count(errors.begin(), errors.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out = "every request failed";
  for (std::size_t i = 0; i < by_count.size(); ++i) {
    out += cat(i ? ", " : ": ", by_count[i].first, " x", by_count[i].second);
    if (i > 0) continue;
    for (const auto& r : requests)
      if (!r.ok && r.error == by_count[i].first && !r.error_detail.empty()) {
        out += cat(" (first: \"", r.error_detail, "\")");
        break;
      }
  }
  return out;
}

}  // namespace

Results run_load(const LoadOptions& o, const LoadHooks& hooks) {
  validate(o);
  // Ctrl-C before the first point (tokenizer, prompts, /v1/models): an interrupted run with no points.
  auto stop_requested = [&] { return hooks.should_stop && hooks.should_stop(); };
  auto nothing_measured = [] {
    Results r;
    r.created_at = utc_now();
    r.env = collect_host_env();
    r.interrupted = true;
    return r;
  };
  const Slo slo = o.slo.empty() ? Slo{} : parse_slo(o.slo);
  const Arrival arrival = parse_arrival(o.arrival);
  const DatasetSpec dataset = parse_dataset(o.dataset);
  const bool replay = replays_trace(o);
  // A replay sends the whole trace unless --num-requests or --duration cuts it.
  const int num_requests = o.duration_s > 0 ? 0 : (o.num_requests > 0 ? o.num_requests : replay ? 0 : default_requests(o));

  // Tokenizer: prompts of exact length and token counts when the server sends no usage.
  std::unique_ptr<Tokenizer> tokenizer;
  const std::string tokenizer_source = !o.tokenizer.empty() ? o.tokenizer
                                       : is_directory_like(o.model) ? o.model
                                       : o.endpoint.empty()         ? "tiny"
                                                                    : "";
  if (!tokenizer_source.empty()) {
    try {
      tokenizer = load_tokenizer(tokenizer_source);
    } catch (const Error& e) {
      if (!o.tokenizer.empty()) throw UsageError(cat("--tokenizer: ", e.what()));
    }
  }
  std::unique_ptr<Tokenizer> stand_in;
  if (!tokenizer) {
    log::warn(cat("no tokenizer for this model (give --tokenizer): prompt lengths are in tiny-tokenizer tokens, ",
                  o.no_stream ? "output tokens come from the server's usage, else the tiny tokenizer's count"
                              : "output tokens come from the server's usage or the event count"));
    stand_in = load_tokenizer("tiny");
  }
  const Tokenizer& prompt_tokenizer = tokenizer ? *tokenizer : *stand_in;

  // Prompts: enough for the warm-ups and the largest point.
  const int wanted = o.warmup_requests + (num_requests > 0 ? num_requests : kPromptPoolForDuration);
  std::vector<LoadPrompt> prompts;
  const int dataset_output_len = o.output_len_given ? o.output_len : 0;  // 0: the dataset's own lengths
  std::vector<double> trace_arrivals_s;  // a replay's schedule, one per prompt (with sessions: per script)
  std::vector<Script> trace_scripts;     // a replay of a trace with sessions or messages: one per arrival
  std::vector<LoadPrompt> warm_prompts;  // a replay's warm-ups: synthetic, sharing no text with the trace
  if (dataset.kind == "sharegpt") prompts = load_sharegpt(dataset.path, prompt_tokenizer, dataset_output_len);
  else if (dataset.kind == "jsonl") prompts = load_jsonl(dataset.path, prompt_tokenizer, dataset_output_len);
  else if (dataset.kind == "trace") {
    TraceSelection select;
    select.output_len = dataset_output_len;
    select.block_size = o.trace_block_size;
    select.seed = o.seed;
    select.max_requests = replay ? static_cast<std::size_t>(num_requests) : static_cast<std::size_t>(wanted);
    if (replay) select.before_ms = o.duration_s * 1e3 * o.trace_speedup;
    select.need_times = replay;
    std::vector<TraceRequest> trace = load_trace(dataset.path, prompt_tokenizer, select, stop_requested);
    const bool scripted = std::any_of(trace.begin(), trace.end(), [](const TraceRequest& r) {
      return r.session >= 0 || !r.messages.empty();
    });
    if (scripted && o.turns > 1)
      throw UsageError(cat("--dataset ", o.dataset, ": its sessions bring their own turns (leave out --turns)"));
    if (scripted && o.api != "chat" &&
        std::any_of(trace.begin(), trace.end(), [](const TraceRequest& r) { return !r.messages.empty(); }))
      throw UsageError(cat("--dataset ", o.dataset, ": lines with \"messages\" need --api chat"));
    for (auto& r : trace) {
      if (!scripted) {
        trace_arrivals_s.push_back(r.arrival_ms / 1e3 / o.trace_speedup);
        prompts.push_back(std::move(r.prompt));
        continue;
      }
      // A session's later turns follow its first; a line alone is a script of one turn.
      ScriptTurn step{std::move(r.prompt), std::move(r.messages), r.delta, std::nullopt, r.delay_ms / o.trace_speedup};
      if (r.turn <= 1) {
        trace_arrivals_s.push_back(r.arrival_ms / 1e3 / o.trace_speedup);
        trace_scripts.push_back(Script{{}, r.session});
      } else if (r.timed && replay) {  // under a load of its own a later turn goes its delay after the answer
        step.at_ms = r.arrival_ms / o.trace_speedup;
      }
      trace_scripts.back().turns.push_back(std::move(step));
    }
    if (scripted && !replay) {
      // A load of its own: whole sessions up to --num-requests requests (the selection took the warm-ups' too,
      // which are synthetic here), each started as a conversation.
      std::size_t keep = 0, total = 0;
      for (const auto& script : trace_scripts) {
        if (num_requests > 0 && keep > 0 && total + script.turns.size() > static_cast<std::size_t>(num_requests)) break;
        total += script.turns.size();
        ++keep;
      }
      trace_scripts.resize(keep);
      for (int c : o.concurrency)
        if (num_requests > 0 && static_cast<std::size_t>(c) > keep)
          throw UsageError(cat("--concurrency ", c, " with the ", keep, " sessions of --num-requests ", num_requests,
                               " never has ", c, " in flight (more --num-requests, or --duration)"));
    }
    if ((replay || scripted) && o.warmup_requests > 0) {
      if (static_cast<long long>(o.warmup_requests) * o.input_len > kMaxPromptTokens)
        throw UsageError(cat(o.warmup_requests, " warm-up prompts of ", o.input_len, " tokens (--warmup-requests, --input-len) are ",
                             static_cast<long long>(o.warmup_requests) * o.input_len, " tokens, more than ", kMaxPromptTokens));
      warm_prompts = synthetic_prompts(prompt_tokenizer, o.warmup_requests, o.input_len, o.output_len,
                                       o.seed ^ 0x5851f42d4c957f2dULL, stop_requested);
    }
  } else
    prompts = synthetic_prompts(prompt_tokenizer, wanted, o.input_len, o.output_len, o.seed, stop_requested, o.range_ratio,
                                o.prefix_len);
  if (stop_requested()) return nothing_measured();

  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& h : o.headers) {
    const auto colon = h.find(':');
    headers.emplace_back(trim(h.substr(0, colon)), trim(h.substr(colon + 1)));
  }
  const std::string api_key = api_key_of(o);
  if (!api_key.empty()) headers.emplace_back("Authorization", "Bearer " + api_key);

  // The server: the one given, or our own on a loopback port.
  std::unique_ptr<ServerProcess> server;
  std::string url = o.endpoint;
  if (url.empty()) {
    std::vector<std::string> argv = o.serve_command;
    argv.insert(argv.end(), {"--port", "0"});
    log::info(cat("starting ", argv[0], " ", o.serve_command.size() > 1 ? o.serve_command[1] : "", " on a loopback port"));
    server = std::make_unique<ServerProcess>(argv, o.serve_timeout_s);
    url = server->url();
  }
  const Endpoint endpoint = parse_endpoint(url);
  const TlsOptions tls{o.ca_cert, o.insecure};
  std::string model = o.model;
  try {
    if (model.empty()) model = first_model(endpoint, headers, std::min(o.timeout_s, kModelsTimeoutS), stop_requested, tls);
  } catch (const Interrupted&) {
    return nothing_measured();
  }
  if (stop_requested()) return nothing_measured();

  Results results;
  results.created_at = utc_now();
  results.env = collect_host_env();
  ClientOptions copts;
  copts.endpoint = endpoint;
  copts.headers = headers;
  copts.timeout_s = o.timeout_s;
  // A whole response's tokens: usage, else a tokenizer (the stand-in when there is none: approximate,
  // and said by the warning above), never the one "event" it arrives as.
  copts.tokenizer = tokenizer ? tokenizer.get() : o.no_stream ? stand_in.get() : nullptr;
  copts.stream = !o.no_stream;
  copts.tls = tls;
  const double events_per_s = measure_parse_rate();
  // A client slower than this would be the bottleneck of a fast endpoint's stream (64 streams at 2 ms a token
  // are 32,000 events/s): the figure goes into every point, and a slow one is said up front.
  if (events_per_s < kMinClientEventsPerS)
    log::warn(cat("this machine parses only ", static_cast<long long>(events_per_s), " SSE events/s (under ",
                  static_cast<long long>(kMinClientEventsPerS), "): the client may limit the streams' figures"));

  // --server-metrics: the pages to scrape, with our headers only on the endpoint's own server.
  struct MetricsTarget {
    Endpoint endpoint;
    std::string path = "/metrics", instance;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  std::vector<MetricsTarget> metrics_targets;
  if (o.server_metrics && o.server_metrics_urls.empty()) metrics_targets.push_back({endpoint, "/metrics", "", headers});
  for (const auto& url : o.server_metrics_urls) {
    MetricsTarget t;
    t.endpoint = parse_endpoint(url);
    if (!t.endpoint.base_path.empty()) t.path = t.endpoint.base_path;
    t.endpoint.base_path.clear();
    if (t.endpoint.host_port() == endpoint.host_port() && t.endpoint.tls == endpoint.tls) t.headers = headers;
    metrics_targets.push_back(std::move(t));
  }
  if (metrics_targets.size() > 1)
    for (auto& t : metrics_targets) {
      const bool shared = std::count_if(metrics_targets.begin(), metrics_targets.end(), [&](const MetricsTarget& u) {
                            return u.endpoint.host_port() == t.endpoint.host_port();
                          }) > 1;
      t.instance = shared ? t.endpoint.host_port() + t.path : t.endpoint.host_port();
    }

  asio::io_context io;
  LoadClient client(io, copts);
  const std::string path = o.api == "chat" ? "/v1/chat/completions" : "/v1/completions";
  const json extra = parse_extra_body(o.extra_body);
  Driver driver(io, client, path, o.api, model, extra, !o.no_stream, prompts, hooks.should_stop);

  // Fixed points: each concurrency, or each rate; neither (nor --search) means concurrency 1.
  std::vector<std::pair<int, double>> fixed_points;
  for (int c : o.concurrency) fixed_points.emplace_back(c, 0.0);
  for (double r : o.request_rate) fixed_points.emplace_back(0, r);
  if (fixed_points.empty()) fixed_points.emplace_back(replay ? 0 : 1, 0.0);  // a replay: the trace's own schedule
  const std::optional<SearchSpec> search = parse_search(o);

  // One point: warm-ups, then the timed requests; appended to results (unless interrupted before any
  // request finished). Returns the point's index in results.points, or -1 when there is none.
  auto measure = [&](std::size_t i, int concurrency, double rate) -> int {
    if (o.warmup_requests > 0) {
      Schedule warm;
      warm.concurrency = std::min(o.warmup_requests, std::max(concurrency, 1));
      warm.max_requests = o.warmup_requests;
      if (!warm_prompts.empty()) warm.prompts = &warm_prompts;
      if (driver.run(warm).stopped) {
        results.interrupted = true;
        return -1;
      }
    }
    Schedule s;
    s.concurrency = concurrency;
    s.spread = turn_spread(o);
    if (o.turns > 1 && num_requests > 0) s.plan = turns_for_requests(s.spread, num_requests);
    s.max_requests = o.turns > 1 ? static_cast<int>(s.plan.size()) : num_requests;  // conversations when turns > 1
    s.duration_s = o.duration_s;
    s.max_in_flight = o.max_concurrency;
    s.cancel_rate = o.cancel_rate;
    s.cancel_delay_ms = o.cancel_delay_ms;
    s.seed = o.seed;
    if (!trace_scripts.empty()) {  // a trace's sessions: one conversation each (cycled through for --duration)
      s.scripts = &trace_scripts;
      if (num_requests > 0) s.max_requests = static_cast<int>(trace_scripts.size());
    }
    if (rate > 0) {
      const std::size_t n = num_requests > 0 ? static_cast<std::size_t>(s.max_requests)
                                             : static_cast<std::size_t>(std::ceil(rate * o.duration_s * 2 + 100));
      s.arrivals_s = arrival_times(arrival, rate, n, o.seed + i);
      if (o.duration_s > 0)
        s.arrivals_s.erase(std::find_if(s.arrivals_s.begin(), s.arrivals_s.end(),
                                        [&](double t) { return t >= o.duration_s; }),
                           s.arrivals_s.end());
    } else if (replay) {
      s.arrivals_s = trace_arrivals_s;  // already cut by --num-requests and --duration
      s.prompts = &prompts;
    }
    std::vector<std::unique_ptr<MetricsScraper>> scrapers;
    for (const auto& t : metrics_targets) {
      scrapers.push_back(std::make_unique<MetricsScraper>(t.endpoint, t.path, t.headers, tls, o.server_metrics_interval_ms,
                                                          t.instance));
      scrapers.back()->start();
    }
    Drive d = driver.run(s);
    results.interrupted = d.stopped;
    std::optional<ServerMetrics> server_metrics;
    if (!scrapers.empty()) {
      std::vector<ServerMetrics> pages;
      for (auto& scraper : scrapers) {
        pages.push_back(scraper->finish());
        if (pages.back().scrapes == 0)
          log::warn(cat("--server-metrics: no page read from ", pages.back().url, ": ", pages.back().error));
      }
      server_metrics = merge_server_metrics(std::move(pages));
    }

    PointResult p;
    p.mode = "load";
    p.weights = "unknown";
    p.params.model = model;
    p.params.label = o.label.empty() ? model : o.label;
    p.params.batch = concurrency;
    p.params.prompt_len = dataset.kind == "synthetic" ? o.prefix_len + o.input_len : 0;
    p.params.max_new_tokens = dataset.kind == "synthetic" || o.output_len_given ? o.output_len : 0;
    p.params.seed = o.seed;
    clear_engine_params(p.params);
    p.params.device = "endpoint";
    p.prompt_source = dataset.kind;
    p.tokenizer = tokenizer ? tokenizer->info().source : "none (prompts by the built-in tiny tokenizer)";
    p.trim = 0;
    p.warmup = o.warmup_requests;  // as load.warmup_requests: requests sent and not timed before the point
    LoadResult l;
    l.endpoint = endpoint.url();
    l.api = o.api;
    l.concurrency = concurrency;
    l.request_rate = rate;
    l.arrival = rate > 0 ? arrival.name() : "";
    l.num_requests = num_requests;
    if (replay) {
      // The offered rate of a replay is its mean: (n - 1) requests over the span from first to last arrival.
      const auto& a = s.arrivals_s;
      const double span = a.size() > 1 ? a.back() - a.front() : 0;
      l.request_rate = span > 0 ? (a.size() - 1) / span : 0;
      l.arrival = o.trace_speedup == 1 ? "trace" : cat("trace:", shown(o.trace_speedup));
      if (o.duration_s == 0) l.num_requests = static_cast<int>(a.size());
    }
    if (dataset.kind == "trace") l.trace_block_size = o.trace_block_size;
    if (!trace_scripts.empty() && o.duration_s == 0) {  // sessions: the requests are their turns
      l.num_requests = 0;
      for (const auto& script : trace_scripts) l.num_requests += static_cast<int>(script.turns.size());
    }
    l.turns = o.turns;
    l.turns_stddev = o.turns_stddev;
    l.turn_delay_ms = o.turn_delay_ms;
    l.turn_delay_stddev_ms = o.turn_delay_stddev_ms;
    l.duration_s = o.duration_s;
    l.warmup_requests = o.warmup_requests;
    l.dataset = o.dataset;
    l.range_ratio = o.range_ratio;
    l.prefix_len = o.prefix_len;
    l.extra_body = extra.is_object() ? extra.dump() : "";
    l.stream = !o.no_stream;
    if (endpoint.tls) l.tls_verify = !o.insecure;
    l.max_concurrency = rate > 0 || replay ? o.max_concurrency : 0;
    l.timeout_s = o.timeout_s;
    l.slice_s = o.slice_s;
    l.cancel_rate = o.cancel_rate;
    l.cancel_delay_ms = o.cancel_delay_ms;
    l.slo = slo;
    l.partial = d.stopped;
    l.client_events_per_s = events_per_s;
    std::string by;
    for (const auto& b : d.counted_by) by += (by.empty() ? "" : "+") + b;
    l.token_count_source = by.empty() ? "none" : by;
    double lag = 0;
    for (const auto& r : d.records) lag += r.start_ms - r.scheduled_ms;
    l.mean_send_lag_ms = d.records.empty() ? 0 : lag / d.records.size();
    l.requests = std::move(d.records);
    l.server_metrics = std::move(server_metrics);
    p.load = std::move(l);
    summarize_point(p);
    // Nothing completed is a failed point, unless the client abandoned every request itself.
    if (p.load->completed == 0 && !d.stopped && p.load->cancelled < static_cast<int>(p.load->requests.size())) {
      p.status = "failed";
      p.error = all_failed_message(p.load->errors, p.load->requests);
    }
    if (search) {
      // A probe meets the objective when enough of its requests met every SLO (a failed request never
      // does); an interrupted one neither meets nor misses it (load.partial).
      p.load->search = SearchProbe{search->axis, search->target, !d.stopped && p.load->goodput_fraction >= search->target};
    }
    const std::string where = (rate > 0 ? cat("rate ", rate, "/s") : replay ? std::string("trace replay") : cat("concurrency ", concurrency)) +
                              (o.turns > 1 ? cat(" (conversations of ", o.turns, o.turns_stddev > 0 ? cat("±", shown(o.turns_stddev)) : "", " turns)") : "");
    if (hooks.on_progress)
      hooks.on_progress(search ? cat("probe ", i + 1, ": ", where, ", goodput ", percent1(p.load->goodput_fraction),
                                     d.stopped ? cat(" (interrupted; target ", percent1(search->target), ")")
                                               : cat(" (", p.load->search->passed ? "meets" : "misses", " the target ",
                                                     percent1(search->target), ")"))
                               : cat("point ", i + 1, "/", fixed_points.size(), ": ", where, ", ", p.load->completed,
                                     " completed, ", p.load->failed, " failed"));
    if (p.load->requests.empty() && d.stopped) return -1;
    results.points.push_back(std::move(p));
    return static_cast<int>(results.points.size()) - 1;
  };

  if (!search) {
    for (std::size_t i = 0; i < fixed_points.size() && !results.interrupted; ++i)
      measure(i, fixed_points[i].first, fixed_points[i].second);
  } else {
    // Bisection between the bounds (geometric for rates, integer for concurrency): the lower bound
    // meets the objective, the upper one misses it.
    const bool by_rate = search->axis == "request_rate";
    std::size_t probes = 0;
    auto probe = [&](double v) -> std::optional<bool> {
      const int at = measure(probes++, by_rate ? 0 : static_cast<int>(v), by_rate ? v : 0.0);
      if (at < 0 || results.interrupted) return std::nullopt;
      return results.points[at].load->search->passed;
    };
    auto mark_best = [&](double v) {
      for (auto& p : results.points)
        if (p.load && p.load->search && p.load->search->passed && (by_rate ? p.load->request_rate : p.load->concurrency) == v)
          p.load->search->best = true;
    };
    // `lo` is the highest load met so far (marked best however the search ends, Ctrl-C included).
    const auto low = probe(search->min);
    if (low && *low) {
      double lo = search->min, hi = search->max;
      const auto high = probe(search->max);
      if (high && *high) {
        lo = search->max;
      } else if (high) {
        for (int step = 0; step < search->steps; ++step) {
          if (by_rate ? hi / lo < 1.02 : hi - lo <= 1) break;
          const double mid = by_rate ? std::sqrt(lo * hi) : std::floor((lo + hi) / 2);
          const auto ok = probe(mid);
          if (!ok) break;
          (*ok ? lo : hi) = mid;
        }
      }
      mark_best(lo);
    }
  }
  if (server) server->stop();
  return results;
}

}  // namespace llmbench
