// `llmbench load` against tests/load/scripted_server.py: known delays, injected faults, Poisson arrivals.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/load/client.h"
#include "llmbench/load/runner.h"
#include "llmbench/load/server_process.h"
#include "llmbench/load/sse.h"
#include "llmbench/load/turns.h"
#include "llmbench/stats/stats.h"
#include "llmbench/tokenizer/tokenizer.h"

using namespace llmbench;

double ks_exponential(std::vector<double> sample, double rate);  // test_arrival.cpp

namespace {

// Sanitizer builds (scripts/test.sh --sanitize, --tsan): the instrumented client runs about 2x (ASan) to 10x
// (TSan) slower than the optimised one.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// What run_load's SSE self-measurement (measure_parse_rate, before the first request) takes in this build:
// about 0.1 s optimised, 0.7 s under ASan, 3 s under TSan. Deadlines counted from before run_load add it.
std::chrono::steady_clock::duration self_measurement() {
  const auto t0 = std::chrono::steady_clock::now();
  measure_parse_rate();
  return std::chrono::steady_clock::now() - t0;
}

std::vector<std::string> server_command(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"python3", LLMBENCH_SCRIPTED_SERVER, "--lifetime-s", "60"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A scripted server for one test; stopped by the destructor (and by itself after 60 s).
struct Scripted {
  ServerProcess process;
  explicit Scripted(const std::vector<std::string>& args) : process(server_command(args), 20) {}
};

LoadOptions options_for(const std::string& url) {
  LoadOptions o;
  o.endpoint = url;
  o.tokenizer = "tiny";
  o.input_len = 16;
  o.timeout_s = 10;
  return o;
}

// GET /stats: the server's log of every request it was sent (its time, prompt, max_tokens, chat messages).
nlohmann::json request_log(const Scripted& server) {
  const auto [status, body] = http_get(parse_endpoint(server.process.url()), "/stats", 5, {}, {}, TlsOptions{});
  EXPECT_EQ(status, 200);
  return nlohmann::json::parse(body)["log"];
}

// The TTFTs the server served (ms from reading a request line to writing its first token event), in its log.
std::vector<double> served_ttfts_ms(const nlohmann::json& log) {
  std::vector<double> out;
  for (const auto& entry : log) {
    if (!entry["ttft_ms"].is_null()) out.push_back(entry["ttft_ms"].get<double>());
  }
  return out;
}

// A file of `text` in the temporary directory (a trace), removed by the destructor.
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text)
      : path((std::filesystem::temp_directory_path() / name).string()) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

const PointResult& only_point(const Results& r) {
  EXPECT_EQ(r.points.size(), 1u);
  return r.points.at(0);
}

// Four streamed requests of 5 tokens at `concurrency` against a scripted server with these --faults.
Results run_faulted(const std::string& faults, int concurrency) {
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2", "--faults", faults});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {concurrency};
  o.num_requests = 4;
  o.output_len = 5;
  return run_load(o);
}

}  // namespace

TEST(ScriptedServer, MeasuredLatenciesMatchTheScript) {
  Scripted server({"--ttft-ms", "60", "--itl-ms", "12", "--timing"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {4};
  o.num_requests = 16;
  o.warmup_requests = 2;
  o.output_len = 8;
  o.slo = "ttft_ms=1000";
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  ASSERT_TRUE(p.load);
  const LoadResult& l = *p.load;
  EXPECT_EQ(p.mode, "load");
  EXPECT_EQ(p.params.model, "scripted");  // the first entry of /v1/models
  // The endpoint's engine is not known: none of llmbench's engine defaults stand in for it.
  EXPECT_EQ(p.params.weights, "");
  EXPECT_EQ(p.params.kv_dtype, "");
  EXPECT_FALSE(p.params.cuda_graph);
  EXPECT_FALSE(p.params.fused);
  EXPECT_EQ(p.params.tp, 0);
  EXPECT_EQ(l.completed, 16);
  EXPECT_EQ(l.failed, 0);
  EXPECT_EQ(l.token_count_source, "usage");
  for (const auto& rec : l.requests) {
    EXPECT_EQ(rec.output_tokens, 8);
    EXPECT_EQ(rec.itl_ms.size(), 7u);
  }
  // The server's TTFT and ITL are known. The client's TTFT p50 is never below what the server served (its
  // log: from reading the request line to writing the first event, the script's 60 ms plus however late its
  // threads woke) and above it by the time the server took to notice the request: 1-3 ms for this Python
  // server on a quiet host (a raw-socket Python client sees the same), up to ~6.5 ms with three busy loops
  // beside it on 2 cores. 8 ms of slack still fails a client that stops its clock one 12 ms token late.
  // e2e: the last event's deadline is 144 ms after arrival. ITL: the server keeps deadlines, so lateness
  // does not add up between events.
  const double served_p50 = median(served_ttfts_ms(request_log(server)));
  EXPECT_GE(served_p50, 60);
  EXPECT_GE(p.summary.at("ttft_ms").p50, served_p50 - 0.5);
  EXPECT_LE(p.summary.at("ttft_ms").p50, served_p50 + 8);
  EXPECT_GE(p.summary.at("ttft_ms").min, 60);
  EXPECT_NEAR(p.summary.at("itl_ms").p50, 12, 0.1 * 12);
  EXPECT_NEAR(p.summary.at("tpot_ms").p50, 12, 0.1 * 12);
  EXPECT_GE(p.summary.at("e2e_ms").p50, 60 + 7 * 12);
  EXPECT_LE(p.summary.at("e2e_ms").p50, 1.1 * (60 + 7 * 12));
  // Closed loop of 4 with 144 ms requests: about 4 / 0.144 requests per second, 8 tokens each.
  EXPECT_NEAR(l.requests_per_s, 4 / 0.144, 0.15 * 4 / 0.144);
  EXPECT_NEAR(l.output_tokens_per_s, 8 * l.requests_per_s, 1e-9);
  EXPECT_DOUBLE_EQ(l.goodput_fraction, 1.0);
  // llmbench_timing of the final chunk, averaged per stage.
  EXPECT_DOUBLE_EQ(l.server_stages_ms.at("queue"), 1.0);
  EXPECT_DOUBLE_EQ(l.server_stages_ms.at("prefill"), 4.0);
  // The 50,000 events/s floor is the optimised client's (runner.cpp's kMinClientEventsPerS); instrumented
  // parsing is slower by the sanitizer's factor, so there the figure is only checked to be measured.
  if (kSanitized) {
    EXPECT_GT(l.client_events_per_s, 0);
  } else {
    EXPECT_GE(l.client_events_per_s, 50000);
  }
}

TEST(ScriptedServer, EveryFaultIsCountedAsItsReasonAndTheRunGoesOn) {
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2", "--stall-s", "3",
                   "--faults", "1:http500,3:http429,5:disconnect,7:malformed,9:stall,11:http500"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {2};
  o.num_requests = 16;
  o.output_len = 6;
  o.timeout_s = 1;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  const LoadResult& l = *p.load;
  EXPECT_EQ(p.status, "ok");
  EXPECT_EQ(l.completed, 10);
  EXPECT_EQ(l.failed, 6);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{
                          {"http_500", 2}, {"http_429", 1}, {"disconnect", 1}, {"malformed_sse", 1}, {"timeout", 1}}));
  EXPECT_EQ(p.summary.at("ttft_ms").n, 10);  // failures never enter a latency statistic
  EXPECT_EQ(p.summary.at("e2e_ms").n, 10);
  for (const auto& rec : l.requests)
    if (rec.error == "timeout") {
      EXPECT_NEAR(rec.e2e_ms, 1000, 150);
    }
}

TEST(ScriptedServer, AConnectionWithStrayBytesIsNotReused) {
  // Requests 0 and 2 are followed, 20 ms later, by a second, unasked-for response. The next request, 100 ms
  // later, found it waiting: reused, that connection answered it at once with it (TTFT ~0, or a failure).
  // Such a connection is closed instead.
  Scripted server({"--ttft-ms", "30", "--itl-ms", "2", "--faults", "0:stale,2:stale"});
  LoadOptions o = options_for(server.process.url());
  o.request_rate = {10};
  o.arrival = "constant";
  o.num_requests = 5;
  o.output_len = 3;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.completed, 5);
  for (const auto& rec : l.requests) {
    EXPECT_TRUE(rec.ok) << rec.error;
    EXPECT_GE(rec.ttft_ms, 30);
  }
}

TEST(ScriptedServer, PoissonArrivalsAsIssuedPassKolmogorovSmirnov) {
  Scripted server({"--ttft-ms", "1", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url());
  const double rate = 100;
  o.request_rate = {rate};
  o.num_requests = 300;
  o.output_len = 1;
  o.seed = 11;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 300);
  std::vector<double> start;
  for (const auto& rec : l.requests) start.push_back(rec.start_ms / 1e3);
  std::sort(start.begin(), start.end());
  std::vector<double> gaps;
  for (std::size_t i = 1; i < start.size(); ++i) gaps.push_back(start[i] - start[i - 1]);
  EXPECT_LT(ks_exponential(gaps, rate), 1.358 / std::sqrt(double(gaps.size())));
  EXPECT_NEAR(l.achieved_rate, rate, 0.2 * rate);
  EXPECT_LT(l.mean_send_lag_ms, 2.0);
  EXPECT_EQ(l.arrival, "poisson");
}

TEST(ScriptedServer, SweepChatWithoutUsageCountsByTokenizer) {
  Scripted server({"--ttft-ms", "2", "--itl-ms", "1", "--no-usage"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.model = "named";
  o.concurrency = {1, 3};
  o.num_requests = 6;
  o.output_len = 5;
  const Results r = run_load(o);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].load->concurrency, 1);
  EXPECT_EQ(r.points[1].load->concurrency, 3);
  for (const auto& p : r.points) {
    EXPECT_EQ(p.params.model, "named");
    EXPECT_EQ(p.load->completed, 6);
    EXPECT_EQ(p.load->token_count_source, "tokenizer");
    // " tok" x 5 by the tiny tokenizer, counted independently here.
    EXPECT_EQ(p.load->requests[0].output_tokens, int(load_tokenizer("tiny")->encode(" tok tok tok tok tok", false).size()));
  }
}

TEST(ScriptedServer, EmptyTextEventsAreTokensMarkersAreNot) {
  // Each request: 6 content events 40 ms, then 25 ms apart, the first 3 (or all) with text ""; chat's role
  // announcement comes at once and a finish chunk with empty text at the end: neither is a token. Were the empty
  // events not counted, the TTFT would be 40 + 3 · 25 = 115 ms: the bound below (90) leaves 50 ms for a slow
  // (sanitized) client.
  for (const char* empty : {"3", "100"}) {
    Scripted server({"--ttft-ms", "40", "--itl-ms", "25", "--empty-text", empty, "--markers"});
    for (const char* api : {"completions", "chat"}) {
      LoadOptions o = options_for(server.process.url());
      o.api = api;
      o.concurrency = {2};
      o.num_requests = 4;
      o.output_len = 6;
      const Results r = run_load(o);
      const LoadResult& l = *only_point(r).load;
      EXPECT_EQ(l.completed, 4) << api << " " << empty;  // not no_content
      EXPECT_EQ(l.token_count_source, "usage");
      for (const auto& rec : l.requests) {
        EXPECT_EQ(rec.output_tokens, 6);
        EXPECT_EQ(rec.itl_ms.size(), 5u) << api << " " << empty;
        EXPECT_GE(rec.ttft_ms, 40) << api << " " << empty;
        EXPECT_LT(rec.ttft_ms, 40 + 2 * 25) << api << " " << empty;
      }
    }
  }
}

TEST(ScriptedServer, WholeResponseOfEmptyTextCountsByUsage) {
  // A whole response whose text is "" but whose usage says 6 tokens (special tokens the server does not print)
  // is a response of 6 tokens; without usage nothing can count it: no_content.
  for (bool usage : {true, false}) {
    std::vector<std::string> args = {"--ttft-ms", "20", "--itl-ms", "5", "--empty-text", "100"};
    if (!usage) args.push_back("--no-usage");
    Scripted server(args);
    for (const char* api : {"completions", "chat"}) {
      LoadOptions o = options_for(server.process.url());
      o.api = api;
      o.no_stream = true;
      o.concurrency = {2};
      o.num_requests = 4;
      o.output_len = 6;
      const Results r = run_load(o);
      const LoadResult& l = *only_point(r).load;
      if (usage) {
        EXPECT_EQ(l.completed, 4) << api;
        for (const auto& rec : l.requests) {
          EXPECT_EQ(rec.output_tokens, 6) << api;
          EXPECT_EQ(rec.ttft_ms, rec.e2e_ms) << api;  // a whole response's first token arrives with its last
        }
      } else {
        EXPECT_EQ(l.failed, 4) << api;
        for (const auto& rec : l.requests) EXPECT_EQ(rec.error, "no_content") << api;
      }
    }
  }
}

TEST(ScriptedServer, WithoutUsageTheTokenizerNeverCountsFewerThanTheEvents) {
  // 6 content events per request, all of text "", no usage: the tokenizer counts 0 tokens in "", but every
  // content event is a token, so each request has 6 (counted by the events) and 5 inter-token gaps.
  Scripted server({"--ttft-ms", "20", "--itl-ms", "5", "--empty-text", "100", "--no-usage"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {2};
  o.num_requests = 4;
  o.output_len = 6;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.completed, 4);
  EXPECT_EQ(l.token_count_source, "events");
  for (const auto& rec : l.requests) {
    EXPECT_EQ(rec.output_tokens, 6);
    EXPECT_EQ(rec.itl_ms.size(), 5u);
  }
  EXPECT_GT(l.output_tokens_per_s, 0);
}

TEST(ScriptedServer, OutputLenGivenOverridesADatasetsLengths) {
  // A JSONL dataset asks for 5 and 7 tokens; --output-len 3, given, asks for 3 in every request (and names the
  // point's max_new_tokens); not given, each line's own length, and max_new_tokens 0 (they differ).
  const TempFile prompts("llmbench_output_len.jsonl",
                         "{\"prompt\": \"one two three\", \"output_len\": 5}\n{\"prompt\": \"four five\", \"output_len\": 7}\n");
  Scripted server({"--ttft-ms", "10", "--itl-ms", "2"});
  for (bool given : {true, false}) {
    LoadOptions o = options_for(server.process.url());
    o.dataset = "jsonl:" + prompts.path;
    o.concurrency = {1};
    o.num_requests = 4;
    o.output_len = 3;
    o.output_len_given = given;
    const Results r = run_load(o);
    const PointResult& p = only_point(r);
    ASSERT_EQ(p.load->completed, 4) << given;
    std::vector<int> lengths;
    for (const auto& rec : p.load->requests) lengths.push_back(rec.output_tokens);
    std::sort(lengths.begin(), lengths.end());
    EXPECT_EQ(lengths, given ? std::vector<int>({3, 3, 3, 3}) : std::vector<int>({5, 5, 7, 7})) << given;
    EXPECT_EQ(p.params.max_new_tokens, given ? 3 : 0);
  }
}

TEST(ScriptedServer, StartsItsOwnServerAndStopsIt) {
  LoadOptions o;
  o.serve_command = server_command({"--ttft-ms", "1", "--itl-ms", "1"});
  o.tokenizer = "tiny";
  o.num_requests = 3;
  o.output_len = 2;
  o.input_len = 4;
  const Results r = run_load(o);
  EXPECT_EQ(only_point(r).load->completed, 3);
  EXPECT_EQ(only_point(r).load->endpoint.rfind("http://127.0.0.1:", 0), 0u);
}

TEST(ScriptedServer, StopWritesTheFinishedPartOnly) {
  Scripted server({"--ttft-ms", "5", "--itl-ms", "20"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {2, 4};
  o.num_requests = 1000;
  o.output_len = 5;
  // 700 ms into the requests: after the client's self-measurement, which takes seconds under a sanitizer.
  const auto before_requests = self_measurement();
  const auto t0 = std::chrono::steady_clock::now();
  LoadHooks hooks;
  hooks.should_stop = [&] {
    return std::chrono::steady_clock::now() - t0 > before_requests + std::chrono::milliseconds(700);
  };
  const Results r = run_load(o, hooks);
  EXPECT_TRUE(r.interrupted);
  const LoadResult& l = *only_point(r).load;
  EXPECT_TRUE(l.partial);
  EXPECT_GT(l.completed, 0);
  EXPECT_LT(l.completed, 1000);
  EXPECT_EQ(l.errors.count("cancelled"), 0u);  // requests cut by the stop are dropped, not failures
  EXPECT_LT(std::chrono::steady_clock::now() - t0, before_requests + std::chrono::seconds(5));
}

TEST(ScriptedServer, TimeoutIsADeadlineWhateverTheServerKeepsSending) {
  // Request 0 streams events back to back forever, request 1 keep-alive comments: every read is quick,
  // the request is not. Both time out at --timeout-s.
  Scripted server({"--ttft-ms", "1", "--itl-ms", "1", "--faults", "0:flood,1:keepalive"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 3;
  o.output_len = 3;
  o.timeout_s = 0.5;
  const auto before_requests = self_measurement();  // seconds under a sanitizer, not part of the deadline
  const auto t0 = std::chrono::steady_clock::now();
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.completed, 1);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"timeout", 2}}));
  for (const auto& rec : l.requests)
    if (!rec.ok) {
      EXPECT_GE(rec.e2e_ms, 490);  // ended by the deadline, not before it, and not much after (a busy box
      EXPECT_LT(rec.e2e_ms, 2500);  // may delay the timer; without the deadline it never ended)
    }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, before_requests + std::chrono::seconds(4));
}

TEST(ScriptedServer, ALineWithoutEndFailsTheRequestABigEventDoesNot) {
  // Request 0: a `data:` line that never ends (it used to grow memory by ~200 MB/s); request 1: a 10 MB event.
  Scripted server({"--ttft-ms", "1", "--itl-ms", "1", "--faults", "0:longline,1:huge"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 2;
  o.output_len = 3;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"event_too_large", 1}}));
  ASSERT_EQ(l.completed, 1);
  EXPECT_EQ(l.requests[1].output_tokens, 3);
  EXPECT_LT(l.requests[0].e2e_ms, 5000);
}

TEST(ScriptedServer, InterimResponsesLateEventsAndCrLineEndsAreFine) {
  // 100 Continue before the 200; an error event and junk after [DONE]; CR-only line ends.
  Scripted server({"--ttft-ms", "1", "--itl-ms", "1", "--faults", "0:continue,1:afterdone,2:cr"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 4;
  o.output_len = 3;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.completed, 4);
  EXPECT_TRUE(l.errors.empty());
  for (const auto& rec : l.requests) {
    EXPECT_EQ(rec.output_tokens, 3);
    EXPECT_EQ(rec.itl_ms.size(), 2u);
  }
}

TEST(ScriptedServer, ImplausibleUsageFallsBackToTheTokenizer) {
  // 4 content events of " tok"; usage.completion_tokens as the server claims it.
  const int by_tokenizer = int(load_tokenizer("tiny")->encode(" tok tok tok tok", false).size());
  // (Negative, fractional and string counts are parse_chunk's: test_sse.cpp.)
  const std::vector<std::pair<std::string, int>> cases = {
      {"1", by_tokenizer},           // fewer than the content events: TPOT would be missing
      {"3000000000", by_tokenizer},  // beyond int: it used to wrap
      {"4.0", 4}, {"9", 9}};
  for (const auto& [claim, want] : cases) {
    Scripted server({"--ttft-ms", "1", "--itl-ms", "1", "--usage-completion", claim});
    LoadOptions o = options_for(server.process.url());
    o.num_requests = 1;
    o.output_len = 4;
    const Results r = run_load(o);
    const LoadResult& l = *only_point(r).load;
    ASSERT_EQ(l.completed, 1) << claim;
    EXPECT_EQ(l.requests[0].output_tokens, want) << claim;
    EXPECT_EQ(l.token_count_source, want == by_tokenizer ? "tokenizer" : "usage") << claim;
    EXPECT_TRUE(l.requests[0].tpot_ms().has_value()) << claim;
    EXPECT_LE(l.requests[0].itl_ms.size(), std::size_t(want - 1)) << claim;  // never more gaps than tokens
  }
}

TEST(ScriptedServer, AModelIdThatCannotNameThePointsIsRefused) {
  // The id names the points and goes into tables: empty or with control characters, --model is asked for.
  for (const char* id : {"", "bad\nid", "red\x1b[31m"}) {
    Scripted server({"--model", id});
    LoadOptions o = options_for(server.process.url());
    o.num_requests = 1;
    o.output_len = 1;
    try {
      run_load(o);
      ADD_FAILURE() << "accepted '" << id << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("give --model"), std::string::npos) << e.what();
    }
  }
}

TEST(ScriptedServer, ModelLookupSkipsAnInterimResponse) {
  Scripted server({"--models-continue"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 2;
  o.output_len = 2;
  const Results r = run_load(o);
  EXPECT_EQ(only_point(r).params.model, "scripted");  // was "HTTP 100 (give --model)"
  EXPECT_EQ(only_point(r).load->completed, 2);
}

TEST(ScriptedServer, StopDuringTheModelLookupEndsAtOnce) {
  Scripted server({"--models-stall-s", "20"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 1;
  o.output_len = 1;
  const auto t0 = std::chrono::steady_clock::now();
  LoadHooks hooks;
  hooks.should_stop = [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300); };
  const Results r = run_load(o, hooks);
  EXPECT_TRUE(r.interrupted);
  EXPECT_TRUE(r.points.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST(ScriptedServer, ModelLookupTimesOutAtTimeoutS) {
  Scripted server({"--models-stall-s", "20"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 1;
  o.timeout_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run_load(o), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST(ScriptedServer, TinyDurationStillSendsTheFirstWave) {
  Scripted server({"--ttft-ms", "1", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {2};
  o.duration_s = 1e-9;
  o.output_len = 2;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  EXPECT_EQ(p.status, "ok");
  EXPECT_EQ(p.load->completed, 2);
}

TEST(ScriptedServer, TraceReplayKeepsTheTracesTimesAndPrompts) {
  // Seven requests over one second of trace time, replayed twice as fast: 0, 0, 60, 150, 150, 300, 500 ms.
  // Each asks for its own number of tokens, which names it in the server's log.
  const TempFile trace("llmbench_replay.jsonl",
      "{\"timestamp\": 2000, \"input_length\": 12, \"output_length\": 7}\n"
      "{\"timestamp\": 1000, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [5, 6, 7]}\n"
      "{\"timestamp\": 1000, \"input_length\": 18, \"output_length\": 2, \"hash_ids\": [5, 6, 8]}\n"
      "{\"timestamp\": 1120, \"prompt\": \"the trace's own words\", \"output_length\": 3}\n"
      "{\"timestamp\": 1300, \"input_length\": 9, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 1300, \"input_length\": 3, \"output_length\": 5}\n"
      "{\"timestamp\": 1600, \"input_length\": 30, \"output_length\": 6}\n");
  const std::map<int, double> expected_ms = {{1, 0}, {2, 0}, {3, 60}, {4, 150}, {5, 150}, {6, 300}, {7, 500}};
  const double tolerance_ms = kSanitized ? 60 : 20;
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2"});
  LoadOptions o = options_for(server.process.url());
  o.dataset = "trace:" + trace.path;
  o.trace_speedup = 2;
  o.trace_block_size = 8;
  o.warmup_requests = 2;
  o.output_len = 9;  // the warm-ups' (synthetic) length; not given, so the trace keeps its own
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  const LoadResult& l = *p.load;
  ASSERT_EQ(l.completed, 7);
  EXPECT_EQ(l.arrival, "trace:2");
  EXPECT_EQ(l.num_requests, 7);
  EXPECT_EQ(l.concurrency, 0);
  EXPECT_DOUBLE_EQ(l.request_rate, 6 / 0.5);  // six gaps over half a second
  EXPECT_EQ(l.trace_block_size, 8);
  EXPECT_TRUE(is_trace_replay(l));
  std::vector<double> scheduled;
  for (const auto& rec : l.requests) scheduled.push_back(rec.scheduled_ms);
  EXPECT_EQ(scheduled, (std::vector<double>{0, 0, 60, 150, 150, 300, 500}));
  EXPECT_LT(l.mean_send_lag_ms, tolerance_ms);

  // The server's view: two warm-ups of 9 tokens first, then each trace request at its time (from the first).
  const nlohmann::json log = request_log(server);
  ASSERT_EQ(log.size(), 9u);
  EXPECT_EQ(log[0]["max_tokens"], 9);
  EXPECT_EQ(log[1]["max_tokens"], 9);
  std::map<int, double> seen_ms;
  std::map<int, std::string> prompt;
  for (std::size_t i = 2; i < log.size(); ++i) {
    seen_ms[log[i]["max_tokens"].get<int>()] = log[i]["t_ms"].get<double>();
    prompt[log[i]["max_tokens"].get<int>()] = log[i]["prompt"].get<std::string>();
  }
  ASSERT_EQ(seen_ms.size(), 7u);
  const double first = std::min(seen_ms[1], seen_ms[2]);
  for (const auto& [tokens, at] : expected_ms)
    EXPECT_NEAR(seen_ms[tokens] - first, at, tolerance_ms) << "the request of " << tokens << " tokens";
  EXPECT_EQ(prompt[3], "the trace's own words");
  const auto tok = load_tokenizer("tiny");
  EXPECT_EQ(tok->encode(prompt[1], false).size(), 20u);
  EXPECT_EQ(tok->encode(prompt[7], false).size(), 12u);
  // Hash ids 5, 6 in both: the same first 16 tokens' text.
  std::size_t k = 0;
  while (k < prompt[1].size() && k < prompt[2].size() && prompt[1][k] == prompt[2][k]) ++k;
  EXPECT_GE(tok->encode(prompt[1].substr(0, k), false).size(), 15u);
  for (const auto& [tokens, text] : prompt)  // the warm-ups share no text with the trace
    EXPECT_NE(log[0]["prompt"].get<std::string>().substr(0, 8), text.substr(0, std::min<std::size_t>(8, text.size())));

  // --duration 0.2 s keeps the requests of the first 400 trace ms; a cap of one in flight holds the tie's
  // second request until the first is done (its wait is send lag).
  o.warmup_requests = 0;
  o.duration_s = 0.2;
  o.max_concurrency = 1;
  const Results cut = run_load(o);
  const LoadResult& c = *only_point(cut).load;
  EXPECT_EQ(c.completed, 5);
  EXPECT_EQ(c.num_requests, 0);
  EXPECT_EQ(c.max_concurrency, 1);
  EXPECT_GT(c.mean_send_lag_ms, 0.5);
}

TEST(ScriptedServer, ServerMetricsScrapedDuringThePointMatchWhatTheServerDid) {
  // Twelve streams of 10 tokens, four at a time, 30 ms to the first token: the server's own gauge of streams
  // peaks at 4, its token counter grows by exactly 120 during the point, its TTFT histogram gains 12
  // observations of about 30 ms (bucket (25, 50] ms).
  Scripted server({"--ttft-ms", "30", "--itl-ms", "10"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {4};
  o.num_requests = 12;
  o.output_len = 10;
  o.warmup_requests = 4;  // before the point: not in its counters
  o.server_metrics = true;
  o.server_metrics_interval_ms = 20;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 12);
  ASSERT_TRUE(l.server_metrics);
  const ServerMetrics& m = *l.server_metrics;
  EXPECT_EQ(m.url, server.process.url() + "/metrics");
  EXPECT_EQ(m.interval_ms, 20);
  EXPECT_GE(m.scrapes, kSanitized ? 3 : 10);  // 4 rounds of 120 ms, a page every 20 ms
  EXPECT_EQ(m.failed_scrapes, 0);
  EXPECT_EQ(m.gauges.at("scripted_requests_running").max, 4);
  EXPECT_EQ(m.gauges.at("scripted_requests_running").last, 0);
  EXPECT_EQ(m.counters.at("scripted_tokens_total").increase, 120);
  const auto& ttft = m.histograms.at("scripted_ttft_seconds");
  EXPECT_EQ(ttft.count, 12);
  EXPECT_NEAR(*ttft.mean, 0.030, kSanitized ? 0.02 : 0.005);
  EXPECT_GT(*ttft.p50, 0.025);
  EXPECT_LE(*ttft.p50, 0.05);

  // A page that is not there: every scrape fails with its status, the point is measured all the same.
  o.server_metrics_urls = {server.process.url() + "/no-metrics"};
  o.warmup_requests = 0;
  const Results missing = run_load(o);
  const LoadResult& n = *only_point(missing).load;
  EXPECT_EQ(n.completed, 12);
  ASSERT_TRUE(n.server_metrics);
  EXPECT_EQ(n.server_metrics->url, server.process.url() + "/no-metrics");
  EXPECT_EQ(n.server_metrics->scrapes, 0);
  EXPECT_GE(n.server_metrics->failed_scrapes, 2);
  EXPECT_EQ(n.server_metrics->error, "HTTP 404");
  EXPECT_TRUE(n.server_metrics->gauges.empty());

  // Two servers' pages (the one under load and an idle one, as a prefill and a decode worker would be), and a
  // third URL that fails: one set of figures, each series labelled by its server.
  Scripted idle({"--ttft-ms", "30", "--itl-ms", "10"});
  o.server_metrics_urls = {server.process.url() + "/metrics", idle.process.url() + "/metrics", server.process.url() + "/none"};
  const Results both = run_load(o);
  const ServerMetrics& b = *only_point(both).load->server_metrics;
  const std::string here = parse_endpoint(server.process.url()).host_port(), there = parse_endpoint(idle.process.url()).host_port();
  EXPECT_EQ(b.url, server.process.url() + "/metrics, " + idle.process.url() + "/metrics, " + server.process.url() + "/none");
  // Two URLs on one server: HOST:PORT/PATH tells them apart.
  EXPECT_EQ(b.counters.at("scripted_tokens_total{instance=\"" + here + "/metrics\"}").increase, 120);
  EXPECT_EQ(b.counters.at("scripted_tokens_total{instance=\"" + there + "\"}").increase, 0);
  EXPECT_EQ(b.gauges.at("scripted_requests_running{instance=\"" + here + "/metrics\"}").max, 4);
  EXPECT_EQ(b.histograms.at("scripted_ttft_seconds{instance=\"" + here + "/metrics\"}").count, 12);
  EXPECT_EQ(b.error, server.process.url() + "/none: HTTP 404");
  EXPECT_GE(b.failed_scrapes, 2);
  EXPECT_GE(b.scrapes, 2 * (kSanitized ? 3 : 10));
}

TEST(ScriptedServer, EveryRequestFailedNamesTheCommonestReason) {
  Scripted server({"--faults", "0:http429,1:http500,2:http500"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 3;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  EXPECT_EQ(p.status, "failed");
  // The server's message of the commonest reason's first request (scripted: {"error": {"message": "http500"}}).
  EXPECT_EQ(p.error, "every request failed: http_500 x2 (first: \"http500\"), http_429 x1");
}

TEST(ScriptedServer, TheServersErrorMessageIsKept) {
  // A JSON error body (its error.message), a plain-text one delimited by the connection's close (its first line,
  // control characters out), error events mid-stream and a whole response's error object: each request's
  // error_detail, and the all-failed line names the first.
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2", "--faults",
                   "0:http400,1:http503text,2:errvllm,3:errdetail,4:errllamacpp,5:errtgi,6:http400"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {1};
  o.num_requests = 7;
  o.output_len = 6;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  std::vector<std::string> details;
  for (const auto& rec : p.load->requests) details.push_back(rec.error + ": " + rec.error_detail);
  EXPECT_EQ(details, (std::vector<std::string>{"http_400: min_tokens is not supported by this server",
                                               "http_503: overloaded: try again",
                                               "server_error: engine dead",
                                               "server_error: something broke",
                                               "server_error: the request exceeds the available context size",
                                               "server_error: Input validation error",
                                               "http_400: min_tokens is not supported by this server"}));
  EXPECT_EQ(p.error, "every request failed: server_error x4 (first: \"engine dead\"), http_400 x2, http_503 x1");
  Scripted whole({"--ttft-ms", "5", "--itl-ms", "2", "--faults", "0:errvllm,1:http400"});
  o = options_for(whole.process.url());
  o.no_stream = true;
  o.concurrency = {1};
  o.num_requests = 2;
  o.output_len = 4;
  const Results w = run_load(o);
  EXPECT_EQ(only_point(w).error, "every request failed: http_400 x1 (first: \"min_tokens is not supported by this server\"), "
                                 "server_error x1");
  EXPECT_EQ(only_point(w).load->requests.at(0).error_detail, "engine dead");
}

TEST(ScriptedServer, AnErrorStatusStaysTheReasonWhenItsBodyOutlastsTheDeadline) {
  // A 503 whose JSON body stops after its start (fuzz_load_http's hold_error_body): the deadline (0.5 s, before the
  // client's 2 s wait for error bodies) ends the request as what the server said, http_503, not as a timeout.
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2", "--stall-s", "3", "--faults", "0:http503slow"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {1};
  o.num_requests = 2;
  o.output_len = 4;
  o.timeout_s = 0.5;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  ASSERT_EQ(p.load->requests.size(), 2u);
  const RequestRecord& failed = p.load->requests.at(0);
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.error, "http_503");
  EXPECT_EQ(failed.error_detail, "{\"error\": {\"message\": \"overloaded\"");  // the body so far, as text
  EXPECT_GE(failed.e2e_ms, 450);
  EXPECT_LT(failed.e2e_ms, 2000);
  EXPECT_TRUE(p.load->requests.at(1).ok);
}

TEST(ScriptedServer, ServerThatNeverListensIsAnError) {
  EXPECT_THROW(ServerProcess({"python3", "-c", "print('hello')"}, 5), Error);
  EXPECT_THROW(ServerProcess({"/nonexistent/binary"}, 5), Error);
}

TEST(ScriptedServer, ReasoningDeltasAreTokens) {
  // A reasoning model's stream: 8 events 60 ms, then 12 ms apart, the first 4 carrying thinking
  // (delta.reasoning_content with content null, or delta.reasoning) and no content. They are generated
  // tokens: TTFT is the first of them (not the first answer event, 48 ms later), and every gap is an ITL.
  Scripted server({"--ttft-ms", "60", "--itl-ms", "12", "--reasoning", "4"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.concurrency = {2};
  o.num_requests = 4;
  o.output_len = 8;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  EXPECT_EQ(p.load->completed, 4);
  for (const auto& rec : p.load->requests) {
    EXPECT_GE(rec.ttft_ms, 60);
    EXPECT_LT(rec.ttft_ms, 60 + 30);
    EXPECT_EQ(rec.itl_ms.size(), 7u);
    EXPECT_EQ(rec.output_tokens, 8);
  }
  EXPECT_NEAR(p.summary.at("tpot_ms").p50, 12, 0.1 * 12);
}

TEST(ScriptedServer, AReasoningOnlyResponseIsContentCountedByTheTokenizer) {
  // Every event (or a whole response's message) carries reasoning text alone, no usage: not no_content, and the
  // tokenizer counts the reasoning text.
  Scripted server({"--ttft-ms", "10", "--itl-ms", "2", "--reasoning", "100", "--no-usage"});
  const int think = int(load_tokenizer("tiny")->encode(" think think think think think", false).size());
  for (bool stream : {true, false}) {
    LoadOptions o = options_for(server.process.url());
    o.api = "chat";
    o.no_stream = !stream;
    o.concurrency = {2};
    o.num_requests = 4;
    o.output_len = 5;
    const Results r = run_load(o);
    const LoadResult& l = *only_point(r).load;
    EXPECT_EQ(l.completed, 4) << stream;
    EXPECT_EQ(l.token_count_source, think > 5 ? "tokenizer" : "events") << stream;
    for (const auto& rec : l.requests) EXPECT_EQ(rec.output_tokens, std::max(think, 5)) << stream;
  }
}

TEST(ScriptedServer, ErrorEventsOfEveryShapeAreServerErrors) {
  // After 2 tokens: vLLM's {"object": "error"} and FastAPI's {"detail": ...} (each followed by [DONE]: they
  // used to pass as completed requests), llama.cpp's `error:` line (was incomplete_stream) and TGI's
  // `event: error`; without streaming, a 200 whose body is vLLM's error object (was no_content).
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2", "--faults", "0:errvllm,1:errdetail,2:errllamacpp,3:errtgi,4:errvllm"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {1};
  o.num_requests = 6;
  o.output_len = 6;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  EXPECT_EQ(l.completed, 1);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"server_error", 5}}));
  Scripted whole({"--ttft-ms", "5", "--itl-ms", "2", "--faults", "0:errvllm"});
  o = options_for(whole.process.url());
  o.no_stream = true;
  o.concurrency = {1};
  o.num_requests = 2;
  o.output_len = 4;
  const Results rw = run_load(o);
  const LoadResult& w = *only_point(rw).load;
  EXPECT_EQ(w.completed, 1);
  EXPECT_EQ(w.errors, (std::map<std::string, int>{{"server_error", 1}}));
}

TEST(ScriptedServer, NamedEventsOtherThanMessageAreSkipped) {
  // Requests 0 and 2 get an `event: ping` whose data is not JSON before every event (was malformed_sse).
  const Results rl = run_faulted("0:ping,2:ping", 2);
  const LoadResult& l = *only_point(rl).load;
  EXPECT_EQ(l.completed, 4);
  EXPECT_TRUE(l.errors.empty());
  for (const auto& rec : l.requests) EXPECT_EQ(rec.output_tokens, 5);
}

TEST(ScriptedServer, DoneWithWhitespaceEndsTheStream) {
  // Requests 1 and 2 end with `data: [DONE] ` (was malformed_sse).
  const Results rl = run_faulted("1:donespace,2:donespace", 2);
  const LoadResult& l = *only_point(rl).load;
  EXPECT_EQ(l.completed, 4);
  EXPECT_TRUE(l.errors.empty());
}

TEST(ScriptedServer, ResponseHeadersBeyondEightKibibytesPass) {
  // Requests 0 and 3 come with 40 KB of headers (a gateway's): past Beast's default limit of 8 KiB (bad_http).
  const Results rl = run_faulted("0:bighdr,3:bighdr", 2);
  const LoadResult& l = *only_point(rl).load;
  EXPECT_EQ(l.completed, 4);
  EXPECT_TRUE(l.errors.empty());
}

TEST(ScriptedServer, AnEncodedBodyIsUnsupportedEncoding) {
  // Requests 0 and 2 come gzip-compressed though no Accept-Encoding was sent (were incomplete_stream).
  const Results rl = run_faulted("0:gzip,2:gzip", 1);
  const LoadResult& l = *only_point(rl).load;
  EXPECT_EQ(l.completed, 2);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"unsupported_encoding", 2}}));
  EXPECT_EQ(l.requests.at(0).error_detail, "Content-Encoding: gzip");
}

TEST(ScriptedServer, ConversationsCarryTheirHistory) {
  // Four conversations of three turns, two under way at a time, 40 ms of think time between an answer and
  // the next turn. The server logs every request's messages.
  Scripted server({"--ttft-ms", "5", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.turns = 3;
  o.turn_delay_ms = 40;
  o.concurrency = {2};
  o.num_requests = 12;
  o.output_len = 3;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 12);
  EXPECT_EQ(l.turns, 3);
  EXPECT_EQ(l.turn_delay_ms, 40);
  EXPECT_EQ(l.concurrency, 2);
  // Each conversation's turns in order, each sent the think time after the answer before it.
  std::map<int, std::vector<const RequestRecord*>> by_conversation;
  for (const auto& rec : l.requests) by_conversation[rec.conversation].push_back(&rec);
  ASSERT_EQ(by_conversation.size(), 4u);
  std::vector<std::pair<double, double>> spans;  // each conversation, first send to last answer
  for (const auto& [id, recs] : by_conversation) {
    ASSERT_EQ(recs.size(), 3u) << id;
    for (int t = 0; t < 3; ++t) EXPECT_EQ(recs[t]->turn, t + 1);
    for (int t = 1; t < 3; ++t) {
      const double answered = recs[t - 1]->start_ms + recs[t - 1]->e2e_ms;
      EXPECT_NEAR(recs[t]->scheduled_ms, answered + 40, 2) << id << " turn " << t + 1;
      EXPECT_GE(recs[t]->start_ms, answered + 39) << id << " turn " << t + 1;
    }
    spans.emplace_back(recs[0]->start_ms, recs[2]->start_ms + recs[2]->e2e_ms);
  }
  // Never more than two conversations at once, and two at the start.
  for (const auto& [begin, end] : spans) {
    int open = 0;
    for (const auto& [b, e] : spans) open += b <= begin && begin < e;
    EXPECT_LE(open, 2);
  }
  EXPECT_EQ(std::count_if(l.requests.begin(), l.requests.end(), [](const RequestRecord& x) { return x.turn == 1 && x.start_ms < 5; }), 2);
  // The prompt grows with the history (the server counts every message's words).
  ASSERT_EQ(l.by_turn.size(), 3u);
  EXPECT_LT(l.by_turn[0].prompt_tokens_mean, l.by_turn[1].prompt_tokens_mean);
  EXPECT_LT(l.by_turn[1].prompt_tokens_mean, l.by_turn[2].prompt_tokens_mean);

  // The server's view: turn k sends 2k - 1 messages, the earlier turn's messages, its answer as the server
  // gave it, and a new user prompt.
  const nlohmann::json log = request_log(server);
  ASSERT_EQ(log.size(), 12u);
  std::map<std::size_t, int> sizes;
  for (const auto& entry : log) {
    const nlohmann::json& m = entry["messages"];
    ++sizes[m.size()];
    if (m.size() == 1) continue;
    const nlohmann::json earlier(m.begin(), m.end() - 2);
    EXPECT_TRUE(std::any_of(log.begin(), log.end(), [&](const nlohmann::json& e) { return e["messages"] == earlier; }));
    EXPECT_EQ(m[m.size() - 2], (nlohmann::json{{"role", "assistant"}, {"content", " tok tok tok"}}));
    EXPECT_EQ(m.back()["role"], "user");
    EXPECT_NE(m.back()["content"], m.front()["content"]);  // a new prompt, not the first again
  }
  EXPECT_EQ(sizes, (std::map<std::size_t, int>{{1, 4}, {3, 4}, {5, 4}}));
}

TEST(ScriptedServer, ConversationsOfASpreadOfTurnsAndThinkTimes) {
  // 30 requests of conversations of 3 ± 1.5 turns with 30 ± 15 ms of think time, three at a time: each
  // conversation has its drawn turns (the last cut short to fit 30) and each later turn goes its own drawn
  // think time after the answer before it (load/turns.h draws them; test_turns.cpp checks the draws).
  Scripted server({"--ttft-ms", "2", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.turns = 3;
  o.turns_stddev = 1.5;
  o.turn_delay_ms = 30;
  o.turn_delay_stddev_ms = 15;
  o.concurrency = {3};
  o.num_requests = 30;
  o.output_len = 2;
  o.seed = 7;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 30);
  EXPECT_EQ(l.turns, 3);
  EXPECT_EQ(l.turns_stddev, 1.5);
  EXPECT_EQ(l.turn_delay_ms, 30);
  EXPECT_EQ(l.turn_delay_stddev_ms, 15);
  const TurnSpread spread{3, 1.5, 30, 15, 7};
  const std::vector<int> plan = turns_for_requests(spread, 30);
  std::map<int, std::vector<const RequestRecord*>> by_conversation;
  for (const auto& rec : l.requests) by_conversation[rec.conversation].push_back(&rec);
  ASSERT_EQ(by_conversation.size(), plan.size());
  std::set<int> lengths;
  std::vector<double> thinks;
  for (const auto& [id, recs] : by_conversation) {
    ASSERT_LT(static_cast<std::size_t>(id), plan.size());
    ASSERT_EQ(recs.size(), static_cast<std::size_t>(plan[id])) << id;
    lengths.insert(plan[id]);
    for (std::size_t t = 0; t < recs.size(); ++t) EXPECT_EQ(recs[t]->turn, static_cast<int>(t) + 1);
    for (std::size_t t = 1; t < recs.size(); ++t) {
      const double answered = recs[t - 1]->start_ms + recs[t - 1]->e2e_ms;
      const double think = think_time_ms(spread, id, static_cast<int>(t) + 1);
      thinks.push_back(think);
      EXPECT_NEAR(recs[t]->scheduled_ms, answered + think, 2) << id << " turn " << t + 1;
      EXPECT_GE(recs[t]->start_ms, answered + think - 1) << id << " turn " << t + 1;
    }
  }
  // The spread is there: conversations of at least three lengths, think times more than 20 ms apart.
  EXPECT_GE(lengths.size(), 3u);
  ASSERT_FALSE(thinks.empty());
  EXPECT_GT(*std::max_element(thinks.begin(), thinks.end()) - *std::min_element(thinks.begin(), thinks.end()), 20);
  ASSERT_EQ(l.by_turn.size(), static_cast<std::size_t>(*std::max_element(plan.begin(), plan.end())));
  EXPECT_EQ(l.by_turn[0].completed, static_cast<int>(plan.size()));
}

TEST(ScriptedServer, ThePromptCacheIsWhatTheServersUsageSaid) {
  // A server with a prefix cache of every earlier prompt and answer (--prefix-cache): turn 1 of a conversation
  // finds little of its prompt there, a later turn at least its history (the earlier turn's prompt and answer).
  Scripted server({"--ttft-ms", "2", "--itl-ms", "1", "--prefix-cache"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.turns = 3;
  o.concurrency = {2};
  o.num_requests = 6;
  o.output_len = 3;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 6);
  std::map<int, std::vector<const RequestRecord*>> by_conversation;
  long long prompt = 0, cached = 0;
  for (const auto& rec : l.requests) {
    by_conversation[rec.conversation].push_back(&rec);
    ASSERT_TRUE(rec.cached_tokens.has_value());
    EXPECT_LE(*rec.cached_tokens, rec.prompt_tokens);
    prompt += rec.prompt_tokens;
    cached += *rec.cached_tokens;
  }
  for (const auto& [id, recs] : by_conversation)
    for (std::size_t t = 1; t < recs.size(); ++t)
      EXPECT_GE(*recs[t]->cached_tokens, recs[t - 1]->prompt_tokens + recs[t - 1]->output_tokens) << id << " turn " << t + 1;
  ASSERT_TRUE(l.prompt_cache.has_value());
  EXPECT_EQ(l.prompt_cache->requests, 6);
  EXPECT_EQ(l.prompt_cache->prompt_tokens, prompt);
  EXPECT_EQ(l.prompt_cache->cached_tokens, cached);
  EXPECT_DOUBLE_EQ(*l.prompt_cache->hit_rate, static_cast<double>(cached) / prompt);
  ASSERT_EQ(l.by_turn.size(), 3u);
  EXPECT_LT(*l.by_turn[0].cached_fraction, 0.5);
  EXPECT_GT(*l.by_turn[2].cached_fraction, 0.6);

  // A server that does not say has none; one whose count is not a count, or beyond the prompt's, is not believed.
  for (const char* value : {"", "1000000", "\"12\"", "-3"}) {
    Scripted other(std::string(value).empty() ? std::vector<std::string>{"--ttft-ms", "1", "--itl-ms", "1"}
                                              : std::vector<std::string>{"--ttft-ms", "1", "--itl-ms", "1", "--usage-cached", value});
    LoadOptions q = options_for(other.process.url());
    q.num_requests = 2;
    q.output_len = 2;
    const Results rq = run_load(q);
    const LoadResult& lq = *only_point(rq).load;
    ASSERT_EQ(lq.completed, 2) << value;
    for (const auto& rec : lq.requests) EXPECT_FALSE(rec.cached_tokens.has_value()) << value;
    EXPECT_FALSE(lq.prompt_cache.has_value()) << value;
  }
  Scripted two({"--ttft-ms", "1", "--itl-ms", "1", "--usage-cached", "2"});
  LoadOptions q = options_for(two.process.url());
  q.num_requests = 2;
  q.output_len = 2;
  q.input_len = 64;
  const Results rq = run_load(q);
  ASSERT_TRUE(only_point(rq).load->prompt_cache.has_value());
  for (const auto& rec : only_point(rq).load->requests) EXPECT_GE(rec.prompt_tokens, 2);  // words of 64 tokens
  EXPECT_EQ(only_point(rq).load->prompt_cache->cached_tokens, 4);
}

TEST(ScriptedServer, CancelledRequestsAreAbandonedAtTheirDelayAndCountedApart) {
  // 12 streams of 10 tokens (5 ms, then 10 ms a token: about 95 ms each), two at a time; half of them, chosen by
  // the seed, abandoned 30 ms after they were sent. The server sees its stream's client go away.
  Scripted server({"--ttft-ms", "5", "--itl-ms", "10"});
  auto run = [&](std::uint64_t seed) {
    LoadOptions o = options_for(server.process.url());
    o.concurrency = {2};
    o.num_requests = 12;
    o.output_len = 10;
    o.cancel_rate = 50;
    o.cancel_delay_ms = 30;
    o.slo = "ttft_ms=1000";
    o.seed = seed;
    return run_load(o);
  };
  const Results r = run(3);
  const PointResult& p = only_point(r);
  const LoadResult& l = *p.load;
  EXPECT_EQ(p.status, "ok");
  EXPECT_EQ(l.cancel_rate, 50);
  EXPECT_EQ(l.cancel_delay_ms, 30);
  ASSERT_EQ(l.requests.size(), 12u);
  std::vector<bool> cancelled;
  for (const auto& rec : l.requests) {
    cancelled.push_back(!rec.ok);
    if (rec.ok) {
      EXPECT_EQ(rec.output_tokens, 10);
      EXPECT_GE(rec.e2e_ms, 95);
      continue;
    }
    EXPECT_EQ(rec.error, kClientCancel);
    EXPECT_GE(rec.e2e_ms, 30);  // from before the send, so the delay and the send
    EXPECT_LT(rec.e2e_ms, 60);
  }
  const int n = static_cast<int>(std::count(cancelled.begin(), cancelled.end(), true));
  EXPECT_GE(n, 2);
  EXPECT_LE(n, 10);
  EXPECT_EQ(l.cancelled, n);
  EXPECT_EQ(l.completed, 12 - n);
  EXPECT_EQ(l.failed, 0);
  EXPECT_TRUE(l.errors.empty());
  EXPECT_DOUBLE_EQ(l.goodput_fraction, 1.0);  // of the requests left to the server
  EXPECT_EQ(p.summary.at("e2e_ms").n, 12 - n);  // the abandoned ones are in no latency
  // Each abandoned stream's server saw its client go (its next write failed).
  int aborted = 0;
  for (int i = 0; i < 50 && aborted < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto [status, body] = http_get(parse_endpoint(server.process.url()), "/stats", 5, {}, {}, TlsOptions{});
    aborted = nlohmann::json::parse(body)["aborted"].get<int>();
  }
  EXPECT_EQ(aborted, n);
  // The same seed abandons the same requests; another seed others.
  std::vector<bool> again, other;
  const Results rerun = run(3), reseeded = run(4);  // named: a range-for over a temporary's member dangles
  for (const auto& rec : only_point(rerun).load->requests) again.push_back(!rec.ok);
  for (const auto& rec : only_point(reseeded).load->requests) other.push_back(!rec.ok);
  EXPECT_EQ(again, cancelled);
  EXPECT_NE(other, cancelled);
}

TEST(ScriptedServer, EveryRequestCancelledAtOnceIsStillAPoint) {
  // --cancel-rate 100 --cancel-delay-ms 0: each request is abandoned as soon as it is sent. The server still
  // got every one (its log); the point is ok with nothing completed, and nothing failed.
  Scripted server({"--ttft-ms", "20", "--itl-ms", "5"});
  LoadOptions o = options_for(server.process.url());
  o.num_requests = 3;
  o.output_len = 4;
  o.cancel_rate = 100;
  const Results r = run_load(o);
  const PointResult& p = only_point(r);
  EXPECT_EQ(p.status, "ok");
  EXPECT_EQ(p.load->completed, 0);
  EXPECT_EQ(p.load->failed, 0);
  EXPECT_EQ(p.load->cancelled, 3);
  std::size_t logged = 0;
  for (int i = 0; i < 50 && logged < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    logged = request_log(server).size();
  }
  EXPECT_EQ(logged, 3u);
}

TEST(ScriptedServer, TimeSlicesAccountForEveryRequestAndToken) {
  // A second of closed loop, in slices of a quarter second: the slices' requests are all the point's, their
  // tokens (rate times length) all its output tokens.
  Scripted server({"--ttft-ms", "5", "--itl-ms", "5"});
  LoadOptions o = options_for(server.process.url());
  o.concurrency = {2};
  o.duration_s = 1;
  o.output_len = 6;
  o.slice_s = 0.25;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_GT(l.completed, 10);
  double end_ms = 0;
  long long tokens = 0;
  for (const auto& rec : l.requests) {
    end_ms = std::max(end_ms, rec.start_ms + rec.e2e_ms);
    tokens += rec.output_tokens;
  }
  ASSERT_EQ(l.by_slice.size(), static_cast<std::size_t>(std::ceil(end_ms / 250)));
  int started = 0;
  double counted = 0;
  for (std::size_t i = 0; i < l.by_slice.size(); ++i) {
    const TimeSlice& s = l.by_slice[i];
    EXPECT_DOUBLE_EQ(s.start_s, 0.25 * i);
    started += s.started;
    counted += s.output_tokens_per_s * s.duration_s;
    if (i + 1 < l.by_slice.size()) {
      EXPECT_EQ(s.duration_s, 0.25);
      EXPECT_GT(s.completed, 0);  // two streams at a time all second long
    }
  }
  EXPECT_EQ(started, static_cast<int>(l.requests.size()));
  EXPECT_NEAR(counted, tokens, 1e-6);
}

TEST(ScriptedServer, ConversationsOverCompletionsAndFailures) {
  // completions: the history is one prompt, the texts joined. Concurrency 1: two conversations of three turns,
  // one after the other; the second request (conversation 0, turn 2) fails, which ends that conversation.
  Scripted server({"--ttft-ms", "2", "--itl-ms", "1", "--faults", "1:http500"});
  LoadOptions o = options_for(server.process.url());
  o.turns = 3;
  o.num_requests = 6;
  o.output_len = 2;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.requests.size(), 5u);
  EXPECT_EQ(l.completed, 4);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"http_500", 1}}));
  std::vector<std::pair<int, int>> order;
  for (const auto& rec : l.requests) order.emplace_back(rec.conversation, rec.turn);
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 1}, {1, 2}, {1, 3}}));
  const nlohmann::json log = request_log(server);
  ASSERT_EQ(log.size(), 5u);
  const std::string t1 = log[2]["prompt"], t2 = log[3]["prompt"], t3 = log[4]["prompt"];
  EXPECT_EQ(t2.rfind(t1 + " tok tok", 0), 0u) << t2;  // turn 1's prompt and answer, then the new prompt
  EXPECT_GT(t2.size(), t1.size() + 8);
  EXPECT_EQ(t3.rfind(t2 + " tok tok", 0), 0u) << t3;
  EXPECT_EQ(l.by_turn.size(), 3u);
  EXPECT_EQ(l.by_turn[1].failed, 1);

  // An open loop starts conversations at the rate: 20/s constant, three conversations of two turns.
  Scripted again({"--ttft-ms", "2", "--itl-ms", "1"});
  LoadOptions rate = options_for(again.process.url());
  rate.turns = 2;
  rate.num_requests = 6;
  rate.output_len = 2;
  rate.request_rate = {20};
  rate.arrival = "constant";
  const Results opened = run_load(rate);
  const LoadResult& open = *only_point(opened).load;
  ASSERT_EQ(open.completed, 6);
  EXPECT_EQ(open.request_rate, 20);
  std::vector<double> starts;
  for (const auto& rec : open.requests)
    if (rec.turn == 1) starts.push_back(rec.scheduled_ms);
  EXPECT_EQ(starts, (std::vector<double>{0, 50, 100}));
}

TEST(ScriptedServer, StopEndsConversationsInTheirThinkTime) {
  // Every conversation is between turns (a 60 s think time) when the stop comes: the point ends at once with
  // the first turns, not after the think time.
  Scripted server({"--ttft-ms", "2", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url());
  o.turns = 2;
  o.turn_delay_ms = 60000;
  o.concurrency = {3};
  o.num_requests = 6;
  o.output_len = 2;
  const auto before_requests = self_measurement();
  const auto t0 = std::chrono::steady_clock::now();
  LoadHooks hooks;
  hooks.should_stop = [&] { return std::chrono::steady_clock::now() - t0 > before_requests + std::chrono::milliseconds(500); };
  const Results r = run_load(o, hooks);
  EXPECT_TRUE(r.interrupted);
  const LoadResult& l = *only_point(r).load;
  EXPECT_TRUE(l.partial);
  EXPECT_EQ(l.completed, 3);
  for (const auto& rec : l.requests) EXPECT_EQ(rec.turn, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, before_requests + std::chrono::seconds(3));
}

TEST(ScriptedServer, TraceSessionsReplayTurnByTurn) {
  // Replayed twice as fast: a line alone at 0; session "p" (prompts) at 40 ms, its second turn 60 ms after
  // the first answer (delay 120); session "m" (messages, sent as they are) at 80 ms, its second turn at 300 ms
  // (timestamp 600) or after the first answer if that comes later. Each asks for its own number of tokens.
  const TempFile trace("llmbench_sessions.jsonl",
      "{\"timestamp\": 1000, \"prompt\": \"alone\", \"output_length\": 1}\n"
      "{\"session_id\": \"p\", \"timestamp\": 1080, \"input_length\": 6, \"output_length\": 2}\n"
      "{\"session_id\": \"m\", \"timestamp\": 1160, \"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, "
      "{\"role\": \"user\", \"content\": \"m1\"}], \"output_length\": 3}\n"
      "{\"session_id\": \"p\", \"delay\": 120, \"input_length\": 5, \"output_length\": 4}\n"
      "{\"session_id\": \"m\", \"timestamp\": 1600, \"messages\": [{\"role\": \"user\", \"content\": \"m1\"}, "
      "{\"role\": \"assistant\", \"content\": \"recorded\"}, {\"role\": \"user\", \"content\": \"m2\"}], \"output_length\": 5}\n");
  const double tolerance_ms = kSanitized ? 60 : 20;
  Scripted server({"--ttft-ms", "5", "--itl-ms", "2"});
  LoadOptions o = options_for(server.process.url());
  o.api = "chat";
  o.dataset = "trace:" + trace.path;
  o.trace_speedup = 2;
  const Results r = run_load(o);
  const LoadResult& l = *only_point(r).load;
  ASSERT_EQ(l.completed, 5);
  EXPECT_EQ(l.num_requests, 5);
  std::map<int, const RequestRecord*> by_tokens;  // output tokens name the request
  for (const auto& rec : l.requests) by_tokens[rec.output_tokens] = &rec;
  ASSERT_EQ(by_tokens.size(), 5u);
  EXPECT_EQ(by_tokens[1]->turn, 0);  // alone (it takes conversation number 0 all the same)
  EXPECT_EQ(by_tokens[2]->conversation, 1);
  EXPECT_EQ(by_tokens[4]->conversation, 1);
  EXPECT_EQ(by_tokens[4]->turn, 2);
  EXPECT_EQ(by_tokens[3]->conversation, 2);
  EXPECT_EQ(by_tokens[5]->turn, 2);
  EXPECT_DOUBLE_EQ(by_tokens[2]->scheduled_ms, 40);
  EXPECT_DOUBLE_EQ(by_tokens[3]->scheduled_ms, 80);
  const double p_answered = by_tokens[2]->start_ms + by_tokens[2]->e2e_ms;
  EXPECT_NEAR(by_tokens[4]->scheduled_ms, p_answered + 60, 2);
  EXPECT_GE(by_tokens[4]->start_ms, p_answered + 59);
  EXPECT_DOUBLE_EQ(by_tokens[5]->scheduled_ms, 300);  // its answer before came long before 300 ms
  EXPECT_NEAR(by_tokens[5]->start_ms, 300, tolerance_ms);

  std::map<int, nlohmann::json> seen;  // max_tokens -> messages
  for (const auto& entry : request_log(server)) seen[entry["max_tokens"].get<int>()] = entry["messages"];
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[1], (nlohmann::json::array({{{"role", "user"}, {"content", "alone"}}})));
  // Session "p": its second turn carries the first prompt, the server's answer and the new prompt.
  ASSERT_EQ(seen[4].size(), 3u);
  EXPECT_EQ(seen[4][0], seen[2][0]);
  EXPECT_EQ(seen[4][1], (nlohmann::json{{"role", "assistant"}, {"content", " tok tok"}}));
  EXPECT_EQ(load_tokenizer("tiny")->encode(seen[4][2]["content"].get<std::string>(), false).size(), 5u);
  // Session "m": the messages as the trace has them.
  EXPECT_EQ(seen[3], nlohmann::json::parse(R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "m1"}])"));
  EXPECT_EQ(seen[5][1]["content"], "recorded");
  ASSERT_EQ(l.by_turn.size(), 2u);
  EXPECT_EQ(l.by_turn[0].completed, 2);
  EXPECT_EQ(l.by_turn[1].completed, 2);

  // "message_mode": "delta" (AIPerf's): each line has the turn's new messages only; the history between them
  // carries the answers the server gave, not a recorded transcript.
  const TempFile deltas("llmbench_deltas.jsonl",
      "{\"session_id\": \"d\", \"timestamp\": 0, \"message_mode\": \"delta\", \"messages\": [{\"role\": \"system\", "
      "\"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"d1\"}], \"output_length\": 6}\n"
      "{\"session_id\": \"d\", \"delay\": 10, \"message_mode\": \"delta\", \"messages\": [{\"role\": \"user\", "
      "\"content\": \"d2\"}], \"output_length\": 7}\n");
  o.dataset = "trace:" + deltas.path;
  const Results dr = run_load(o);
  ASSERT_EQ(only_point(dr).load->completed, 2);
  std::map<int, nlohmann::json> sent;
  for (const auto& entry : request_log(server)) sent[entry["max_tokens"].get<int>()] = entry["messages"];
  EXPECT_EQ(sent[6], nlohmann::json::parse(R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "d1"}])"));
  EXPECT_EQ(sent[7], nlohmann::json::parse(R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "d1"},
      {"role": "assistant", "content": " tok tok tok tok tok tok"}, {"role": "user", "content": "d2"}])"));
  o.dataset = "trace:" + trace.path;

  // Under a load of its own (one conversation at a time) the sessions run one after another in the order of
  // their starts: the line alone, "p" (its second turn 120 ms after the answer: a later turn's delay still
  // applies), "m" (its second turn at once: a later turn's timestamp is the replay's only).
  o.concurrency = {1};
  o.trace_speedup = 1;
  o.num_requests = 5;
  const Results loaded = run_load(o);
  const LoadResult& c = *only_point(loaded).load;
  ASSERT_EQ(c.completed, 5);
  EXPECT_EQ(c.num_requests, 5);
  std::vector<std::pair<int, int>> order;  // (output tokens, conversation) in issue order
  for (const auto& rec : c.requests) order.emplace_back(rec.output_tokens, rec.turn == 0 ? -1 : rec.conversation);
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{{1, -1}, {2, 1}, {4, 1}, {3, 2}, {5, 2}}));
  EXPECT_GE(c.requests[2].start_ms, c.requests[1].start_ms + c.requests[1].e2e_ms + 119);
  EXPECT_LT(c.requests[4].start_ms, c.requests[3].start_ms + c.requests[3].e2e_ms + 100);  // not at its timestamp
  // --num-requests 4 cuts whole sessions: the line alone and "p"; --turns with sessions is refused; messages
  // need the chat API.
  o.num_requests = 4;
  EXPECT_EQ(only_point(run_load(o)).load->num_requests, 3);
  o.turns = 2;
  o.num_requests = 4;
  EXPECT_THROW(run_load(o), UsageError);
  o.turns = 1;
  o.num_requests = 0;  // the whole trace, session "m" and its messages included
  o.concurrency.clear();
  o.api = "completions";
  EXPECT_THROW(run_load(o), UsageError);
}
