// validate(): what `llmbench load` refuses before sending anything (exit 2 on the command line).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "llmbench/base/error.h"
#include "llmbench/load/runner.h"
#include "llmbench/load/turns.h"

using namespace llmbench;

namespace {

LoadOptions valid() {
  LoadOptions o;
  o.endpoint = "http://127.0.0.1:8000";
  return o;
}

// The UsageError's message for options changed by `change`, or "" when they pass.
std::string refusal(const std::function<void(LoadOptions&)>& change) {
  LoadOptions o = valid();
  change(o);
  try {
    validate(o);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(LoadValidate, TimeoutMustBeFiniteAndBounded) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double t : {1e10, 1e308, inf, std::nan(""), 0.0, -1.0})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.timeout_s = t; }).find("--timeout-s"), std::string::npos) << t;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.timeout_s = 1e6; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.timeout_s = 0.01; }), "");
}

TEST(LoadValidate, ImpossibleSizesAreRefusedUpFront) {
  EXPECT_NE(refusal([](LoadOptions& o) { o.num_requests = 100000000; }).find("--num-requests"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.warmup_requests = 2000000000; }).find("--warmup-requests"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.input_len = 2000000000; }).find("--input-len"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.output_len = 2000000000; }).find("--output-len"), std::string::npos);
  // Each within its bound, but together too many synthetic prompt tokens to make up front.
  EXPECT_NE(refusal([](LoadOptions& o) { o.num_requests = 1000000, o.input_len = 1000; }).find("synthetic prompts"),
            std::string::npos);
  // Under --duration the prompts are a pool of 256: the advice is shorter prompts, not --duration again.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.concurrency = {1}, o.duration_s = 1, o.input_len = 1000000; }),
            "256 synthetic prompts (the 256 that --duration cycles through + --warmup-requests) of up to 1000000 tokens "
            "(--input-len) are up to 256000000 tokens, more than 50000000 (shorter prompts)");
  EXPECT_NE(refusal([](LoadOptions& o) { o.request_rate = {1e308}, o.duration_s = 0.5; }).find("--request-rate"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.request_rate = {1000}, o.duration_s = 1e5; }).find("requests per point"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.request_rate = {1e-300}; }).find("--request-rate"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.duration_s = 1e300; }).find("--duration"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.concurrency = {2000000000}; }).find("--concurrency"), std::string::npos);
  // Large but sane.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.num_requests = 100000, o.input_len = 256, o.warmup_requests = 1000; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.request_rate = {500}, o.duration_s = 600; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.duration_s = 1e-9; }), "");
}

TEST(LoadValidate, RangeRatio) {
  for (double r : {-0.1, 1.0, 2.0, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.range_ratio = r; }).find("--range-ratio must be in [0, 1)"), std::string::npos) << r;
  EXPECT_NE(refusal([](LoadOptions& o) { o.range_ratio = 0.5, o.dataset = "jsonl:x.jsonl"; }).find("synthetic"),
            std::string::npos);
  // The longest request counts: 1.2e7 tokens are within --input-len's bound, 1.2e7 * 1.5 are not.
  EXPECT_NE(refusal([](LoadOptions& o) { o.range_ratio = 0.5, o.input_len = 12000000, o.num_requests = 1; }).find("reaches 18000000"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.range_ratio = 0.9, o.num_requests = 300000, o.input_len = 100; }).find("up to 190"),
            std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.range_ratio = 0.9, o.num_requests = 200000, o.input_len = 100; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.range_ratio = 0.999; }), "");
}

TEST(LoadValidate, PrefixLen) {
  EXPECT_NE(refusal([](LoadOptions& o) { o.prefix_len = -1; }).find("--prefix-len must be in [0, "), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.prefix_len = 20000000; }).find("--prefix-len must be in [0, "), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.prefix_len = 8, o.dataset = "sharegpt:x.json"; }).find("synthetic"),
            std::string::npos);
  // The prefix counts in every prompt's tokens: 100,000 prompts of 128 + 400 tokens are too many.
  EXPECT_NE(refusal([](LoadOptions& o) { o.prefix_len = 400, o.num_requests = 100000; }).find("--prefix-len"),
            std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.prefix_len = 400, o.num_requests = 1000; }), "");
}

TEST(LoadValidate, MaxConcurrencyCapsAnOpenLoopOnly) {
  EXPECT_NE(refusal([](LoadOptions& o) { o.max_concurrency = 4; }).find("--request-rate"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.max_concurrency = 4, o.concurrency = {2}; }).find("--request-rate"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.max_concurrency = -1, o.request_rate = {2}; }).find("--max-concurrency must be"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.max_concurrency = 2000000000, o.request_rate = {2}; }).find("--max-concurrency must be"),
            std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.max_concurrency = 32, o.request_rate = {2, 4}; }), "");
}

TEST(LoadValidate, ExtraBodyIsAJsonObjectThatLeavesOurFieldsAlone) {
  EXPECT_EQ(refusal([](LoadOptions& o) { o.extra_body = R"({"top_k": 20, "min_tokens": null})"; }), "");
  for (const char* bad : {"[1]", "20", "{", "null", R"({"model": "x"})", R"({"stream": false})", R"({"prompt": "x"})",
                          R"({"messages": []})"})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.extra_body = bad; }).find("--extra-body"), std::string::npos) << bad;
  EXPECT_NE(refusal([](LoadOptions& o) { o.extra_body = "{\"a\": \"" + std::string(70000, 'x') + "\"}"; }).find("bytes"),
            std::string::npos);
}

TEST(LoadRequestBody, NoStreamAsksForAWholeResponse) {
  using nlohmann::json;
  const json whole = json::parse(request_body("completions", "m", "hi", 8, nullptr, false));
  EXPECT_EQ(whole["stream"], false);
  EXPECT_FALSE(whole.contains("stream_options"));
  EXPECT_EQ(whole["max_tokens"], 8);
  EXPECT_NE(refusal([](LoadOptions& o) { o.no_stream = true, o.slo = "ttft_ms=100"; }).find("--no-stream"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.no_stream = true, o.slo = "e2e_ms=900,tpot_ms=5"; }).find("--no-stream"),
            std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.no_stream = true, o.slo = "e2e_ms=900"; }), "");
}

TEST(LoadRequestBody, ExtraBodyIsAMergePatch) {
  using nlohmann::json;
  EXPECT_TRUE(parse_extra_body("{}").is_null());  // changes nothing, so it is no other point
  EXPECT_TRUE(parse_extra_body(" { } ").is_null());
  const json plain = json::parse(request_body("completions", "m", "hi", 8));
  EXPECT_EQ(plain["max_tokens"], 8);
  EXPECT_EQ(plain["min_tokens"], 8);
  EXPECT_EQ(plain["ignore_eos"], true);
  EXPECT_EQ(plain["prompt"], "hi");
  // A trace line's extra comes after --extra-body: it overrides it, and its nulls remove fields too.
  const json line = json::parse(request_body("completions", "m", "hi", 8, parse_extra_body(R"({"top_k": 20, "min_tokens": null})"),
                                             true, json::parse(R"({"top_k": 5, "ignore_eos": null})")));
  EXPECT_EQ(line["top_k"], 5);
  EXPECT_FALSE(line.contains("min_tokens"));
  EXPECT_FALSE(line.contains("ignore_eos"));
  EXPECT_EQ(line["max_tokens"], 8);
  const json merged = json::parse(request_body("chat", "m", "hi", 8, parse_extra_body(
      R"({"min_tokens": null, "ignore_eos": null, "max_tokens": null, "max_completion_tokens": 8, "top_k": 20,
          "stream_options": {"continuous_usage_stats": true}})")));
  EXPECT_FALSE(merged.contains("min_tokens"));
  EXPECT_FALSE(merged.contains("ignore_eos"));
  EXPECT_FALSE(merged.contains("max_tokens"));
  EXPECT_EQ(merged["max_completion_tokens"], 8);
  EXPECT_EQ(merged["top_k"], 20);
  EXPECT_EQ(merged["stream_options"], (json{{"include_usage", true}, {"continuous_usage_stats", true}}));  // merged, not replaced
  EXPECT_EQ(merged["messages"][0]["content"], "hi");
  EXPECT_EQ(merged["stream"], true);
}

TEST(LoadValidate, SearchRefusals) {
  auto searching = [](LoadOptions& o) { o.search = "rate:1:100", o.slo = "ttft_ms=500"; };
  EXPECT_EQ(refusal(searching), "");
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.max_concurrency = 4; }).find("--max-concurrency"), std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.search = "rate:1:1000000", o.duration_s = 2; }).find("requests per point"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.search_goodput = 0.5; }).find("only apply with --search"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.search_steps = 99; }).find("only apply with --search"), std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.search_steps = 99; }).find("--search-steps must be"), std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.search = "concurrency:1.5:8"; }).find("integers"), std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.search = "rate:1:x"; }).find("expected rate:MIN:MAX"), std::string::npos);
  // A closed loop (or a concurrency probe) of C needs C requests to ever have C in flight.
  EXPECT_NE(refusal([](LoadOptions& o) { o.concurrency = {8}, o.num_requests = 4; }).find("never has 8 in flight"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.concurrency = {200}; }).find("with 100 requests"), std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.concurrency = {8}, o.duration_s = 5; }), "");
  EXPECT_NE(refusal([&](LoadOptions& o) { searching(o), o.search = "concurrency:1:12", o.num_requests = 4; })
                .find("never has 12 in flight"),
            std::string::npos);
  // The prefix counts in a prompt's length limit.
  EXPECT_NE(refusal([](LoadOptions& o) { o.prefix_len = 16777216, o.input_len = 16777216, o.num_requests = 1; })
                .find("--prefix-len 16777216 + --input-len"),
            std::string::npos);
}

TEST(LoadValidate, ApiKeyCannotInjectHeaders) {
  EXPECT_NE(refusal([](LoadOptions& o) { o.api_key = "sk-1\r\nX-Evil: 1"; }).find("--api-key"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.api_key = "sk-1\nX"; }).find("--api-key"), std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.api_key = std::string("sk\0x", 4); }).find("--api-key"), std::string::npos);
  // The refusal does not echo the key.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.api_key = "sk-secret\r\n"; }).find("sk-secret"), std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.api_key = "sk-fine"; }), "");
}

TEST(LoadValidate, ApiKeyFromTheEnvironment) {
  ::setenv("LLMBENCH_TEST_KEY", "sk-from-env", 1);
  ::setenv("LLMBENCH_TEST_BAD_KEY", "sk-bad\r\nX-Evil: 1", 1);
  ::unsetenv("LLMBENCH_TEST_NO_KEY");
  LoadOptions o;
  o.api_key_env = "LLMBENCH_TEST_KEY";
  EXPECT_EQ(api_key_of(o), "sk-from-env");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.api_key_env = "LLMBENCH_TEST_KEY"; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.api_key_env = "LLMBENCH_TEST_NO_KEY"; }),
            "--api-key-env LLMBENCH_TEST_NO_KEY: the variable is not set, or empty");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.api_key_env = "LLMBENCH_TEST_KEY", o.api_key = "sk-2"; }),
            "--api-key and --api-key-env exclude each other");
  const std::string bad = refusal([](LoadOptions& o) { o.api_key_env = "LLMBENCH_TEST_BAD_KEY"; });
  EXPECT_NE(bad.find("--api-key-env LLMBENCH_TEST_BAD_KEY: contains a line break"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("sk-bad"), std::string::npos) << bad;  // the key is not echoed
  o.api_key_env.clear();
  o.api_key = "sk-arg";
  EXPECT_EQ(api_key_of(o), "sk-arg");
}

TEST(LoadValidate, SweepValuesOnceEach) {
  // Twice the same value made two identical points, and gate then refused the file.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.concurrency = {2, 4, 2}; }), "--concurrency lists 2 twice");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.request_rate = {5, 5}; }), "--request-rate lists 5 twice");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.concurrency = {1, 2, 4}; }), "");
}

TEST(LoadValidate, HeaderNamesAreTokens) {
  // A space or parenthesis in the name made every request a 400 (and /v1/models' 400 blamed --model).
  EXPECT_EQ(refusal([](LoadOptions& o) { o.headers = {"X Y: z"}; }),
            "--header 'X Y: z': 'X Y' is not a header name (letters, digits and !#$%&'*+-.^_`|~)");
  EXPECT_NE(refusal([](LoadOptions& o) { o.headers = {"Bad(name): v"}; }).find("is not a header name"), std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.headers = {"X-Team: bench", "x_trace.id~1: a b"}; }), "");
}

TEST(LoadValidate, TraceOptions) {
  // Validation only opens the file; /dev/null stands for a trace.
  auto trace = [](LoadOptions& o) { o.dataset = "trace:/dev/null"; };
  EXPECT_EQ(refusal([&](LoadOptions& o) { trace(o), o.trace_speedup = 10, o.trace_block_size = 16, o.max_concurrency = 8; }), "");
  EXPECT_EQ(refusal([&](LoadOptions& o) { trace(o), o.concurrency = {4}, o.trace_block_size = 16; }), "");  // prompts only
  for (double f : {0.0, -1.0, 1e-4, 1e4, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.trace_speedup = f; }).find("--trace-speedup must be in [0.001, 1000]"),
              std::string::npos) << f;
  for (int b : {0, -5, 2000000})
    EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.trace_block_size = b; }).find("--trace-block-size must be in [1, "),
              std::string::npos) << b;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.trace_speedup = 2; }), "--trace-speedup and --trace-block-size are for --dataset trace:FILE");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.trace_block_size = 64, o.dataset = "jsonl:/dev/null"; }),
            "--trace-speedup and --trace-block-size are for --dataset trace:FILE");
  EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.request_rate = {5}, o.trace_speedup = 2; }).find("gives its prompts only"),
            std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.arrival = "constant"; }).find("the trace's own time"), std::string::npos);
  EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.concurrency = {2}, o.max_concurrency = 4; }).find("caps an open loop"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.dataset = "trace:/nonexistent/t.jsonl"; }).find("cannot open"), std::string::npos);
  // A replay's warm-ups are synthetic: their tokens are bounded as synthetic prompts are.
  EXPECT_NE(refusal([&](LoadOptions& o) { trace(o), o.warmup_requests = 1000000, o.input_len = 100; }).find("warm-up prompts"),
            std::string::npos);
  EXPECT_EQ(refusal([&](LoadOptions& o) { trace(o), o.warmup_requests = 100, o.input_len = 100; }), "");
}

TEST(LoadValidate, ServerMetricsOptions) {
  EXPECT_EQ(refusal([](LoadOptions& o) { o.server_metrics = true, o.server_metrics_interval_ms = 10; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.server_metrics_urls = {"http://127.0.0.1:9090/metrics"}; }), "");
  for (double ms : {0.0, 5.0, 1e5, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.server_metrics = true, o.server_metrics_interval_ms = ms; })
                  .find("--server-metrics-interval-ms must be in [10, 60000]"),
              std::string::npos) << ms;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.server_metrics_interval_ms = 250; }), "--server-metrics-interval-ms is for --server-metrics");
  EXPECT_NE(refusal([](LoadOptions& o) { o.server_metrics_urls = {"ftp://h/metrics"}; }).find("ftp"), std::string::npos);
}

TEST(LoadValidate, TurnsOptions) {
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 4, o.turn_delay_ms = 250, o.num_requests = 40, o.concurrency = {10}; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 3, o.request_rate = {2}, o.duration_s = 5; }), "");
  // Without --num-requests: 100 requests rounded down to whole conversations (33 of 3 turns).
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 3, o.concurrency = {33}; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 3, o.concurrency = {34}; }),
            "--concurrency 34 with 33 conversations never has 34 in flight (more --num-requests, or --duration)");
  for (int t : {0, -2, 1001})
    EXPECT_EQ(refusal([&](LoadOptions& o) { o.turns = t; }), cat("--turns must be in [1, 1000], got ", t));
  for (double d : {-1.0, 4e6, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.turns = 2, o.turn_delay_ms = d; }).find("--turn-delay-ms must be in [0, 3600000]"),
              std::string::npos) << d;
  EXPECT_NE(refusal([](LoadOptions& o) { o.turn_delay_ms = 100; }).find("for --turns 2 or more"), std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 3, o.num_requests = 10; }),
            "--num-requests 10 is not a whole number of conversations of --turns 3");
  EXPECT_NE(refusal([](LoadOptions& o) { o.turns = 2, o.dataset = "trace:/dev/null"; }).find("a trace replay sends each line"),
            std::string::npos);
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 2, o.dataset = "trace:/dev/null", o.concurrency = {2}; }), "");
  EXPECT_NE(refusal([](LoadOptions& o) { o.turns = 2, o.request_rate = {5}, o.max_concurrency = 2; }).find("--max-concurrency does not combine"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.turns = 10, o.request_rate = {1e4}, o.duration_s = 20; }).find("requests per point, more than 1000000"),
            std::string::npos);
  EXPECT_NE(refusal([](LoadOptions& o) { o.turns = 5, o.search = "concurrency:1:30", o.slo = "ttft_ms=100"; }).find("20 conversations per probe"),
            std::string::npos);
}

TEST(LoadValidate, SliceOptions) {
  EXPECT_EQ(refusal([](LoadOptions& o) { o.slice_s = 10, o.duration_s = 60; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.slice_s = 0.001; }), "");
  for (double s : {-1.0, 1e-4, 2e6, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.slice_s = s; }).find("--slice-s must be 0 (none) or seconds in [0.001, 1000000]"),
              std::string::npos) << s;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.slice_s = 0.01, o.duration_s = 1000; }),
            "--slice-s 0.01 cuts --duration 1000 s into more than 10000 slices");
}

TEST(LoadValidate, CancelOptions) {
  EXPECT_EQ(refusal([](LoadOptions& o) { o.cancel_rate = 30, o.cancel_delay_ms = 500; }), "");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.cancel_rate = 100; }), "");  // at once, every one
  for (double r : {-1.0, 100.5, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.cancel_rate = r; }).find("--cancel-rate must be a percent of the requests in [0, 100]"),
              std::string::npos) << r;
  // A cancellation after the timeout would never come: the request has failed by then.
  for (double d : {-1.0, 60000.0, 1e9, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.cancel_rate = 10, o.cancel_delay_ms = d; }).find("--cancel-delay-ms must be in [0, --timeout-s) (60000 ms)"),
              std::string::npos) << d;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.cancel_delay_ms = 5; }),
            "--cancel-delay-ms is when a cancelled request is abandoned: for --cancel-rate above 0");
}

TEST(LoadValidate, TurnSpreadOptions) {
  EXPECT_EQ(refusal([](LoadOptions& o) {
              o.turns = 4, o.turns_stddev = 2, o.turn_delay_ms = 250, o.turn_delay_stddev_ms = 100, o.concurrency = {10};
            }), "");
  // With a spread, --num-requests need not be a multiple of --turns: the last conversation is cut to fit.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 3, o.turns_stddev = 1, o.num_requests = 10; }), "");
  // The conversations are the drawn ones: 3 ± 1 turns for 10 requests are so many (load/turns.h), not 10 / 3.
  const int conversations = static_cast<int>(turns_for_requests(TurnSpread{3, 1, 0, 0, 0}, 10).size());
  EXPECT_EQ(refusal([&](LoadOptions& o) { o.turns = 3, o.turns_stddev = 1, o.num_requests = 10, o.concurrency = {conversations}; }), "");
  EXPECT_EQ(refusal([&](LoadOptions& o) {
              o.turns = 3, o.turns_stddev = 1, o.num_requests = 10, o.concurrency = {conversations + 1};
            }),
            cat("--concurrency ", conversations + 1, " with ", conversations,
                " conversations never has ", conversations + 1, " in flight (more --num-requests, or --duration)"));
  for (double sd : {-1.0, 1001.0, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.turns = 2, o.turns_stddev = sd; }).find("--turns-stddev must be in [0, 1000]"),
              std::string::npos) << sd;
  for (double sd : {-1.0, 4e6, std::nan("")})
    EXPECT_NE(refusal([&](LoadOptions& o) { o.turns = 2, o.turn_delay_stddev_ms = sd; })
                  .find("--turn-delay-stddev-ms must be in [0, 3600000]"),
              std::string::npos) << sd;
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns_stddev = 1; }),
            "--turns-stddev spreads the turns of conversations around --turns: for --turns 2 or more");
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turn_delay_stddev_ms = 5; }),
            "--turn-delay-stddev-ms spreads the think time between turns: for --turns 2 or more");
  // --num-requests is checked before conversations are drawn for it.
  EXPECT_EQ(refusal([](LoadOptions& o) { o.turns = 2, o.turns_stddev = 1, o.num_requests = 2'000'000'000; }),
            "--num-requests must be in [1, 1000000], got 2000000000");
}

TEST(LoadRequestBody, ATurnCarriesTheHistory) {
  using nlohmann::json;
  const std::vector<std::string> history = {"first question", " an answer", "second question"};
  const json chat = json::parse(turn_body("chat", "m", history, 8));
  ASSERT_EQ(chat["messages"].size(), 3u);
  EXPECT_EQ(chat["messages"][0], (json{{"role", "user"}, {"content", "first question"}}));
  EXPECT_EQ(chat["messages"][1], (json{{"role", "assistant"}, {"content", " an answer"}}));
  EXPECT_EQ(chat["messages"][2], (json{{"role", "user"}, {"content", "second question"}}));
  EXPECT_EQ(chat["max_tokens"], 8);
  // completions: one prompt, the texts as they came.
  EXPECT_EQ(json::parse(turn_body("completions", "m", history, 8))["prompt"], "first question an answersecond question");
  EXPECT_EQ(turn_body("chat", "m", {"hi"}, 4), request_body("chat", "m", "hi", 4));
}
