#include <gtest/gtest.h>

#include "llmbench/base/error.h"
#include "llmbench/load/client.h"
#include "llmbench/report/results.h"

using namespace llmbench;

namespace {

RequestRecord ok(double start, double ttft, double e2e, int prompt, int out, std::vector<double> itl = {}) {
  RequestRecord r;
  r.ok = true;
  r.start_ms = r.scheduled_ms = start;
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.prompt_tokens = prompt;
  r.output_tokens = out;
  r.itl_ms = std::move(itl);
  return r;
}

RequestRecord failed(double start, double e2e, const std::string& why) {
  RequestRecord r;
  r.start_ms = r.scheduled_ms = start;
  r.e2e_ms = e2e;
  r.error = why;
  return r;
}

// Five requests over exactly 2 s (first start 0 ms, last end 2000 ms). By hand:
//  A: ttft 100, e2e 1000, 10 tokens -> tpot 100            meets ttft<=150, tpot<=120
//  B: ttft 200, e2e  700,  6 tokens -> tpot 100            misses ttft
//  C: ttft  50, e2e 1950, 11 tokens -> tpot 190 (ends 2000) misses tpot
//  D: http_500;  E: timeout (ends 1500)
//  A's tpot is exactly at B's; goodput: A only -> 0.5 req/s, fraction 1/5.
LoadResult sample() {
  LoadResult l;
  l.slo = parse_slo("ttft_ms=150,tpot_ms=120");
  l.requests = {ok(0, 100, 1000, 20, 10, {100, 100}), ok(100, 200, 700, 30, 6), ok(50, 50, 1950, 50, 11),
                failed(200, 5, "http_500"), failed(500, 1000, "timeout")};
  return l;
}

// A load point of `l` as the load runner writes it, summarized.
PointResult load_point_of(const LoadResult& l) {
  PointResult p;
  p.mode = "load";
  p.weights = "unknown";
  p.params.model = p.params.label = "m";
  clear_engine_params(p.params);
  p.load = l;
  summarize_point(p);
  return p;
}

Results results_of(const PointResult& p) {
  Results r;
  r.points = {p};
  return r;
}

}  // namespace

TEST(LoadResult, HandComputedThroughputAndGoodput) {
  LoadResult l = sample();
  summarize_load(l);
  EXPECT_EQ(l.completed, 3);
  EXPECT_EQ(l.failed, 2);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"http_500", 1}, {"timeout", 1}}));
  EXPECT_DOUBLE_EQ(l.elapsed_s, 2.0);
  EXPECT_DOUBLE_EQ(l.requests_per_s, 1.5);
  EXPECT_DOUBLE_EQ(l.output_tokens_per_s, 27 / 2.0);
  EXPECT_DOUBLE_EQ(l.total_tokens_per_s, (27 + 100) / 2.0);
  EXPECT_DOUBLE_EQ(l.goodput_requests_per_s, 0.5);
  EXPECT_DOUBLE_EQ(l.goodput_fraction, 0.2);
  EXPECT_DOUBLE_EQ(l.achieved_rate, 4 / 0.5);  // 5 issued between 0 and 500 ms
}

TEST(LoadResult, FailedRequestsStayOutOfTheLatencies) {
  LoadResult l = sample();
  EXPECT_EQ(load_metric_values(l, "ttft_ms"), (std::vector<double>{100, 200, 50}));
  EXPECT_EQ(load_metric_values(l, "e2e_ms"), (std::vector<double>{1000, 700, 1950}));
  EXPECT_EQ(load_metric_values(l, "tpot_ms"), (std::vector<double>{100, 100, 190}));
  EXPECT_EQ(load_metric_values(l, "itl_ms"), (std::vector<double>{100, 100}));
  EXPECT_TRUE(load_metric_values(l, "prefill_ms").empty());
}

TEST(LoadResult, SloTextIsWhatSloTakes) {
  EXPECT_EQ(slo_text(parse_slo("e2e_ms=5000,ttft_ms=200.5")), "ttft_ms=200.5,e2e_ms=5000");
  EXPECT_EQ(slo_text(Slo{}), "");
}

TEST(LoadResult, SloParsing) {
  const Slo s = parse_slo("ttft_ms=200,e2e_ms=5000.5");
  EXPECT_EQ(*s.ttft_ms, 200);
  EXPECT_FALSE(s.tpot_ms);
  EXPECT_EQ(*s.e2e_ms, 5000.5);
  for (const char* bad : {"", "ttft=200", "ttft_ms", "ttft_ms=", "ttft_ms=abc", "ttft_ms=-1", "ttft_ms=5x", "itl_ms=3"})
    EXPECT_THROW(parse_slo(bad), UsageError) << bad;
  RequestRecord one = ok(0, 10, 20, 1, 1);  // one token has no TPOT: only TTFT and e2e apply
  EXPECT_TRUE(parse_slo("tpot_ms=1").met_by(one));
  EXPECT_FALSE(parse_slo("e2e_ms=19").met_by(one));
  EXPECT_FALSE(parse_slo("e2e_ms=100").met_by(failed(0, 1, "timeout")));
}

TEST(LoadResult, PointRoundTripsThroughTheResultsFile) {
  PointResult p;
  p.mode = "load";
  p.weights = "unknown";
  p.params.model = p.params.label = "m";
  clear_engine_params(p.params);  // as the load runner writes it
  p.load = sample();
  p.load->requests[0].server_ms = {{"queue", 1.5}, {"prefill", 3}};
  p.load->requests[1].server_ms = {{"queue", 2.5}};
  for (auto& rec : p.load->requests)
    if (!rec.ok) rec.error_detail = "the server's \"message\"";
  summarize_point(p);
  EXPECT_EQ(p.summary.at("ttft_ms").n, 3);
  EXPECT_DOUBLE_EQ(p.summary.at("ttft_ms").p50, 100);
  EXPECT_DOUBLE_EQ(p.load->server_stages_ms.at("queue"), 2.0);
  EXPECT_DOUBLE_EQ(p.load->server_stages_ms.at("prefill"), 3.0);
  EXPECT_EQ(metric_values(p, "output_tok_s"), std::vector<double>{});
  Results r;
  r.points = {p};
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["points"][0]["mode"], "load");
  EXPECT_EQ(j["points"][0]["requests"]["errors"]["http_500"], 1);
  EXPECT_DOUBLE_EQ(j["points"][0]["goodput"]["requests_per_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["points"][0]["throughput"]["output_tokens_per_s"].get<double>(), 13.5);
  const Results back = results_from_json(j);
  ASSERT_TRUE(back.points[0].load);
  EXPECT_EQ(back.points[0].load->requests.size(), 5u);
  EXPECT_EQ(back.points[0].load->requests[3].error_detail, "the server's \"message\"");
  EXPECT_FALSE(j["points"][0]["request_log"][0].contains("error_detail"));  // none for a completed request
  EXPECT_DOUBLE_EQ(back.points[0].load->goodput_requests_per_s, 0.5);
  EXPECT_EQ(to_json(back), j);
  // The range ratio round-trips; older files without it read as exact lengths; out of range is refused.
  nlohmann::json spread = j;
  spread["points"][0]["load"]["range_ratio"] = 0.25;
  EXPECT_DOUBLE_EQ(results_from_json(spread).points[0].load->range_ratio, 0.25);
  spread["points"][0]["load"].erase("range_ratio");
  EXPECT_EQ(results_from_json(spread).points[0].load->range_ratio, 0);
  spread["points"][0]["load"]["range_ratio"] = 1.5;
  EXPECT_THROW(results_from_json(spread), Error);
  // tls_verify: null for http (the sample), a boolean for https; older files without it read as unknown.
  EXPECT_TRUE(j["points"][0]["load"]["tls_verify"].is_null());
  nlohmann::json tls = j;
  tls["points"][0]["load"]["tls_verify"] = false;
  EXPECT_EQ(results_from_json(tls).points[0].load->tls_verify, std::optional<bool>(false));
  EXPECT_EQ(to_json(results_from_json(tls)), tls);
  tls["points"][0]["load"].erase("tls_verify");
  EXPECT_FALSE(results_from_json(tls).points[0].load->tls_verify.has_value());
  tls["points"][0]["load"]["tls_verify"] = "yes";
  EXPECT_THROW(results_from_json(tls), Error);
  // trace_block_size: null unless the dataset was a trace; older files without it read as none; 0 is refused.
  EXPECT_TRUE(j["points"][0]["load"]["trace_block_size"].is_null());
  nlohmann::json trace = j;
  trace["points"][0]["load"]["dataset"] = "trace:t.jsonl";
  trace["points"][0]["load"]["arrival"] = "trace:2";
  trace["points"][0]["load"]["trace_block_size"] = 512;
  EXPECT_EQ(results_from_json(trace).points[0].load->trace_block_size, std::optional<int>(512));
  EXPECT_TRUE(is_trace_replay(*results_from_json(trace).points[0].load));
  EXPECT_EQ(to_json(results_from_json(trace)), trace);
  trace["points"][0]["load"].erase("trace_block_size");
  EXPECT_FALSE(results_from_json(trace).points[0].load->trace_block_size.has_value());
  trace["points"][0]["load"]["trace_block_size"] = 0;
  EXPECT_THROW(results_from_json(trace), Error);
  EXPECT_FALSE(is_trace_replay(*results_from_json(j).points[0].load));
  // server_metrics: null without --server-metrics (and in older files); round-trips; a bad field names its path.
  EXPECT_TRUE(j["points"][0]["server_metrics"].is_null());
  nlohmann::json scraped = j;
  scraped["points"][0]["server_metrics"] = {
      {"url", "http://h:1/metrics"}, {"interval_ms", 500}, {"scrapes", 3}, {"failed_scrapes", 1}, {"error", "HTTP 503"},
      {"bad_lines", 0}, {"dropped_series", 0},
      {"gauges", {{"vllm:num_requests_running", {{"mean", 3.5}, {"min", 0}, {"max", 8}, {"last", 1}}}}},
      {"counters", {{"vllm:generation_tokens_total", {{"increase", 1200}, {"per_s", 600}}}}},
      {"histograms", {{"vllm:time_to_first_token_seconds", {{"count", 10}, {"sum", 2.5}, {"mean", 0.25}, {"p50", 0.2},
                                                             {"p90", 0.4}, {"p99", 0.5}}},
                      {"idle_seconds", {{"count", 0}, {"sum", 0}, {"mean", nullptr}, {"p50", nullptr}, {"p90", nullptr},
                                        {"p99", nullptr}}}}}};
  const auto read = results_from_json(scraped).points[0].load->server_metrics;
  ASSERT_TRUE(read);
  EXPECT_EQ(read->gauges.at("vllm:num_requests_running").max, 8);
  EXPECT_EQ(read->counters.at("vllm:generation_tokens_total").per_s, 600);
  EXPECT_EQ(read->histograms.at("vllm:time_to_first_token_seconds").p99, std::optional<double>(0.5));
  EXPECT_FALSE(read->histograms.at("idle_seconds").mean);
  EXPECT_EQ(to_json(results_from_json(scraped)), scraped);
  scraped["points"][0]["server_metrics"]["gauges"]["vllm:num_requests_running"]["max"] = "eight";
  try {
    results_from_json(scraped);
    ADD_FAILURE() << "a gauge of a string was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("server_metrics.gauges.vllm:num_requests_running.max: expected a number"),
              std::string::npos) << e.what();
  }
  // A negative latency is a corrupt file.
  nlohmann::json negative = j;
  negative["points"][0]["request_log"][0]["ttft_ms"] = -1;
  try {
    results_from_json(negative);
    ADD_FAILURE() << "a negative TTFT was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("request_log[0].ttft_ms: expected a number >= 0, got -1"), std::string::npos)
        << e.what();
  }
  negative = j;
  negative["points"][0]["request_log"][0]["itl_ms"] = {5.0, -2.0};
  EXPECT_THROW(results_from_json(negative), Error);
  // A run point stays a run point.
  Results plain;
  plain.points.resize(1);
  plain.points[0].params.model = "tiny";
  EXPECT_EQ(to_json(plain)["points"][0]["mode"], "run");
  EXPECT_FALSE(results_from_json(to_json(plain)).points[0].load);
  // Bad load keys name their path.
  nlohmann::json broken = j;
  broken["points"][0]["request_log"][1]["ttft_ms"] = "fast";
  try {
    results_from_json(broken);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "points[0].request_log[1].ttft_ms: expected a number, got string");
  }
}

TEST(LoadResult, OlderFilesEngineDefaultsAreCleared) {
  // Files before clear_engine_params wrote llmbench's engine defaults into a load point's params.
  PointResult p;
  p.mode = "load";
  p.weights = "unknown";
  p.params.model = p.params.label = "m";
  p.load = sample();
  summarize_point(p);
  Results r;
  r.points = {p};
  nlohmann::json j = to_json(r);
  nlohmann::json& params = j["points"][0]["params"];
  ASSERT_EQ(params["weights"], "bf16");
  ASSERT_EQ(params["cuda_graph"], true);
  const PointParams back = results_from_json(j).points[0].params;
  EXPECT_EQ(back.weights, "");
  EXPECT_EQ(back.kv_dtype, "");
  EXPECT_EQ(back.fp8_gemm, "");
  EXPECT_FALSE(back.cuda_graph);
  EXPECT_FALSE(back.fused);
  EXPECT_FALSE(back.gemv);
  EXPECT_EQ(back.tp, 0);
  EXPECT_EQ(back.model, "m");
  // A run point keeps what it ran with.
  j["points"][0]["mode"] = "run";
  for (const char* k : {"load", "requests", "request_log", "goodput", "throughput"}) j["points"][0].erase(k);
  j["points"][0]["runs"] = nlohmann::json::array();
  EXPECT_EQ(results_from_json(j).points[0].params.weights, "bf16");
  EXPECT_TRUE(results_from_json(j).points[0].params.cuda_graph);
}

TEST(Endpoint, Parses) {
  Endpoint e = parse_endpoint("http://127.0.0.1:8000");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, "8000");
  EXPECT_EQ(e.base_path, "");
  e = parse_endpoint("http://example.com/openai/");
  EXPECT_EQ(e.port, "80");
  EXPECT_EQ(e.base_path, "/openai");
  // An OpenAI SDK's base URL (with /v1) is the same endpoint: the requests' paths start with /v1.
  EXPECT_EQ(parse_endpoint("http://h:1/v1/").base_path, "");
  EXPECT_EQ(parse_endpoint("http://h:1/openai/v1").base_path, "/openai");
  EXPECT_EQ(parse_endpoint("http://h:1/v10").base_path, "/v10");
  EXPECT_EQ(parse_endpoint("http://h:1/xv1").base_path, "/xv1");
  e = parse_endpoint("http://[::1]:9/");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, "9");
  EXPECT_EQ(e.url(), "http://[::1]:9");  // a URL again, brackets and all
  try {
    parse_endpoint("http://::1:9");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& err) {
    EXPECT_STREQ(err.what(), "--endpoint 'http://::1:9': an IPv6 address goes in brackets: http://[::1]:PORT");
  }
  for (const char* bad : {"", "127.0.0.1:8000", "https://", "https://h:", "http://", "http://:80", "http://h:0", "http://h:99999",
                          "http://h:8a", "http://u:p@h", "http://h/x?y=1", "ftp://h"})
    EXPECT_THROW(parse_endpoint(bad), UsageError) << bad;
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
}

TEST(LoadResult, ConversationsByTurn) {
  // Two conversations of three turns. By hand, per turn (prompt tokens, TTFT, e2e of the completed ones):
  //  turn 1: (10, 40, 100) and (12, 60, 140)   -> prompt mean 11, TTFT p50 50 mean 50, e2e p50 120
  //  turn 2: (30, 70, 150) and a timeout        -> 1 done 1 failed, prompt 30, TTFT 70, e2e 150
  //  turn 3: (50, 90, 200) only (the other conversation ended with its failed turn)
  LoadResult l;
  l.turns = 3;
  l.turn_delay_ms = 25;
  auto in = [](RequestRecord r, int conversation, int turn) {
    r.conversation = conversation;
    r.turn = turn;
    return r;
  };
  l.requests = {in(ok(0, 40, 100, 10, 5), 0, 1), in(ok(5, 60, 140, 12, 5), 1, 1), in(ok(125, 70, 150, 30, 5), 0, 2),
                in(failed(170, 1000, "timeout"), 1, 2), in(ok(300, 90, 200, 50, 5), 0, 3)};
  summarize_load(l);
  ASSERT_EQ(l.by_turn.size(), 3u);
  EXPECT_EQ(l.by_turn[0].completed, 2);
  EXPECT_DOUBLE_EQ(l.by_turn[0].prompt_tokens_mean, 11);
  EXPECT_DOUBLE_EQ(*l.by_turn[0].ttft_ms_p50, 50);
  EXPECT_DOUBLE_EQ(*l.by_turn[0].ttft_ms_mean, 50);
  EXPECT_DOUBLE_EQ(*l.by_turn[0].e2e_ms_p50, 120);
  EXPECT_EQ(l.by_turn[1].completed, 1);
  EXPECT_EQ(l.by_turn[1].failed, 1);
  EXPECT_DOUBLE_EQ(l.by_turn[1].prompt_tokens_mean, 30);
  EXPECT_DOUBLE_EQ(*l.by_turn[1].ttft_ms_p50, 70);
  EXPECT_EQ(l.by_turn[2].turn, 3);
  EXPECT_DOUBLE_EQ(*l.by_turn[2].e2e_ms_p50, 200);
  // A turn with nothing completed has no latencies (null), not zeros.
  l.requests[4] = in(failed(300, 10, "http_500"), 0, 3);
  summarize_load(l);
  EXPECT_EQ(l.by_turn[2].completed, 0);
  EXPECT_FALSE(l.by_turn[2].ttft_ms_p50.has_value());

  const Results r = results_of(load_point_of(l));
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["points"][0]["load"]["turns"], 3);
  EXPECT_EQ(j["points"][0]["load"]["turn_delay_ms"], 25);
  EXPECT_EQ(j["points"][0]["request_log"][3]["conversation"], 1);
  EXPECT_EQ(j["points"][0]["request_log"][3]["turn"], 2);
  EXPECT_EQ(j["points"][0]["by_turn"].size(), 3u);
  EXPECT_TRUE(j["points"][0]["by_turn"][2]["ttft_ms_p50"].is_null());
  const Results back = results_from_json(j);
  EXPECT_EQ(back.points[0].load->requests[3].conversation, 1);
  EXPECT_EQ(back.points[0].load->by_turn.size(), 3u);
  EXPECT_EQ(to_json(back), j);
  // Single requests: no turn fields, by_turn null; older files without turns read as single requests.
  nlohmann::json single = to_json(r);
  for (auto& rec : single["points"][0]["request_log"]) rec.erase("turn"), rec.erase("conversation");
  single["points"][0]["load"].erase("turns");
  single["points"][0]["load"].erase("turn_delay_ms");
  const Results old = results_from_json(single);
  EXPECT_EQ(old.points[0].load->turns, 1);
  EXPECT_TRUE(old.points[0].load->by_turn.empty());
  EXPECT_TRUE(to_json(old)["points"][0]["by_turn"].is_null());
  EXPECT_FALSE(to_json(old)["points"][0]["request_log"][0].contains("turn"));
  // Turns as a file numbers them: a huge one is one more entry, not two billion.
  nlohmann::json far = j;
  far["points"][0]["request_log"][0]["turn"] = 2000000000;
  const Results far_back = results_from_json(far);
  const auto& far_turns = far_back.points[0].load->by_turn;
  ASSERT_EQ(far_turns.size(), 4u);
  EXPECT_EQ(far_turns.back().turn, 2000000000);
  EXPECT_EQ(far_turns.front().completed, 1);
  nlohmann::json bad = j;
  bad["points"][0]["request_log"][0]["turn"] = 0;
  EXPECT_THROW(results_from_json(bad), Error);
  bad = j;
  bad["points"][0]["load"]["turns"] = 0;
  EXPECT_THROW(results_from_json(bad), Error);
  // A spread of turns and think times round-trips; files without one read as none; a negative one is refused.
  EXPECT_EQ(j["points"][0]["load"]["turns_stddev"], 0);
  EXPECT_EQ(j["points"][0]["load"]["turn_delay_stddev_ms"], 0);
  nlohmann::json spread = j;
  spread["points"][0]["load"]["turns_stddev"] = 1.5;
  spread["points"][0]["load"]["turn_delay_stddev_ms"] = 10;
  const Results spread_back = results_from_json(spread);
  EXPECT_EQ(spread_back.points[0].load->turns_stddev, 1.5);
  EXPECT_EQ(spread_back.points[0].load->turn_delay_stddev_ms, 10);
  EXPECT_EQ(conversations_text(*spread_back.points[0].load), "3±1.5 turns, think 25±10 ms");
  EXPECT_EQ(to_json(spread_back), spread);
  EXPECT_EQ(conversations_text(*old.points[0].load), "");
  EXPECT_EQ(conversations_text(*back.points[0].load), "3 turns, think 25 ms");
  EXPECT_EQ(old.points[0].load->turns_stddev, 0);
  for (const char* key : {"turns_stddev", "turn_delay_stddev_ms"}) {
    bad = spread;
    bad["points"][0]["load"][key] = -1;
    EXPECT_THROW(results_from_json(bad), Error) << key;
  }
}

TEST(LoadResult, PromptCacheFromTheUsageOfTheRequestsThatTold) {
  // Turn 1: (prompt 10, cached 0), (12, told nothing); turn 2: (30, cached 20), a failed one told 25 (a failed
  // request counts for nothing). By hand: point 2 requests told, 40 prompt tokens, 20 cached, hit rate 0.5;
  // turn 1 0 / 10 = 0, turn 2 20 / 30.
  LoadResult l = sample();
  auto in = [](RequestRecord r, int conversation, int turn, std::optional<int> cached) {
    r.conversation = conversation;
    r.turn = turn;
    r.cached_tokens = cached;
    return r;
  };
  l.turns = 2;
  l.requests = {in(ok(0, 40, 100, 10, 5), 0, 1, 0), in(ok(5, 60, 140, 12, 5), 1, 1, std::nullopt),
                in(ok(125, 70, 150, 30, 5), 0, 2, 20), in(failed(170, 1000, "timeout"), 1, 2, 25)};
  l.requests[3].prompt_tokens = 30;
  summarize_load(l);
  ASSERT_TRUE(l.prompt_cache.has_value());
  EXPECT_EQ(l.prompt_cache->requests, 2);
  EXPECT_EQ(l.prompt_cache->prompt_tokens, 40);
  EXPECT_EQ(l.prompt_cache->cached_tokens, 20);
  EXPECT_DOUBLE_EQ(*l.prompt_cache->hit_rate, 0.5);
  ASSERT_EQ(l.by_turn.size(), 2u);
  EXPECT_DOUBLE_EQ(*l.by_turn[0].cached_fraction, 0.0);
  EXPECT_DOUBLE_EQ(*l.by_turn[1].cached_fraction, 20.0 / 30);

  const Results r = results_of(load_point_of(l));
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["points"][0]["prompt_cache"],
            (nlohmann::json{{"requests", 2}, {"prompt_tokens", 40}, {"cached_tokens", 20}, {"hit_rate", 0.5}}));
  EXPECT_EQ(j["points"][0]["request_log"][0]["cached_tokens"], 0);
  EXPECT_FALSE(j["points"][0]["request_log"][1].contains("cached_tokens"));
  EXPECT_EQ(j["points"][0]["by_turn"][0]["cached_fraction"], 0.0);
  EXPECT_EQ(to_json(results_from_json(j)), j);
  // Nobody told: no prompt cache (null), no cached fraction by turn.
  nlohmann::json none = j;
  for (auto& rec : none["points"][0]["request_log"]) rec.erase("cached_tokens");
  const Results none_back = results_from_json(none);
  EXPECT_FALSE(none_back.points[0].load->prompt_cache.has_value());
  EXPECT_FALSE(none_back.points[0].load->by_turn[1].cached_fraction.has_value());
  EXPECT_TRUE(to_json(none_back)["points"][0]["prompt_cache"].is_null());
  // More cached than prompt tokens, or fewer than none, is a corrupt file.
  for (int bad : {-1, 31}) {
    nlohmann::json b = j;
    b["points"][0]["request_log"][2]["cached_tokens"] = bad;
    EXPECT_THROW(results_from_json(b), Error) << bad;
  }
}

TEST(LoadResult, CancelledRequestsAreNeitherCompletedNorFailed) {
  // The sample (3 completed, http_500 and a timeout; A alone meets the SLO) and two requests the client
  // abandoned: counted apart, in no error, no latency and no goodput denominator (1 good of 5 answerable).
  LoadResult l = sample();
  l.cancel_rate = 25;
  l.cancel_delay_ms = 40;
  RequestRecord c1 = failed(600, 45, kClientCancel), c2 = failed(700, 41, kClientCancel);
  c1.ttft_ms = 20;
  l.requests.push_back(c1);
  l.requests.push_back(c2);
  summarize_load(l);
  EXPECT_EQ(l.completed, 3);
  EXPECT_EQ(l.failed, 2);
  EXPECT_EQ(l.cancelled, 2);
  EXPECT_EQ(l.errors, (std::map<std::string, int>{{"http_500", 1}, {"timeout", 1}}));
  EXPECT_DOUBLE_EQ(l.goodput_fraction, 1.0 / 5);
  EXPECT_EQ(load_metric_values(l, "ttft_ms"), (std::vector<double>{100, 200, 50}));
  const nlohmann::json j = to_json(results_of(load_point_of(l)));
  EXPECT_EQ(j["points"][0]["requests"]["cancelled"], 2);
  EXPECT_EQ(j["points"][0]["load"]["cancel_rate"], 25);
  EXPECT_EQ(j["points"][0]["load"]["cancel_delay_ms"], 40);
  const Results back = results_from_json(j);
  EXPECT_EQ(back.points[0].load->cancelled, 2);
  EXPECT_EQ(back.points[0].load->cancel_rate, 25);
  EXPECT_EQ(to_json(back), j);
  // Older files: no cancellations; a rate beyond 100 % is refused.
  nlohmann::json old = j;
  old["points"][0]["load"].erase("cancel_rate");
  old["points"][0]["load"].erase("cancel_delay_ms");
  EXPECT_EQ(results_from_json(old).points[0].load->cancel_rate, 0);
  nlohmann::json bad = j;
  bad["points"][0]["load"]["cancel_rate"] = 101;
  EXPECT_THROW(results_from_json(bad), Error);
}

TEST(LoadResult, TimeSlicesByIssueTimeAndTokenArrival) {
  // Slices of 1 s. By hand:
  //  A: issued 0.1 s, TTFT 200 ms, 3 tokens at 0.3, 0.8, 1.3 s (ITL 500, 500), e2e 1200 -> ends 1.3 s
  //  B: issued 0.5 s, TTFT 100 ms, 2 tokens at 0.6, 2.1 s (ITL 1500), e2e 1600 -> ends 2.1 s
  //  C: issued 1.5 s, failed;  D: issued 1.7 s, cancelled by the client (left out)
  //  E: issued 2.2 s, TTFT 50 ms, 1 token at 2.25 s, e2e 50 -> ends 2.25 s, the point's last byte
  // Slice 0 [0, 1): issued A, B; tokens 0.3, 0.8, 0.6 -> 3 / 1 s; TTFT p50 150, TPOT p50 (500, 1500) 1000,
  //   e2e p50 1400. Slice 1 [1, 2): issued C (failed); tokens 1.3 -> 1 / s. Slice 2 [2, 2.25]: issued E;
  //   tokens 2.1, 2.25 -> 2 / 0.25 s = 8 / s.
  LoadResult l;
  l.slice_s = 1;
  l.requests = {ok(100, 200, 1200, 10, 3, {500, 500}), ok(500, 100, 1600, 10, 2, {1500}), failed(1500, 10, "http_500"),
                failed(1700, 30, kClientCancel), ok(2200, 50, 50, 10, 1)};
  summarize_load(l);
  ASSERT_EQ(l.by_slice.size(), 3u);
  const TimeSlice& s0 = l.by_slice[0];
  EXPECT_EQ(s0.start_s, 0);
  EXPECT_EQ(s0.duration_s, 1);
  EXPECT_EQ(s0.started, 2);
  EXPECT_EQ(s0.completed, 2);
  EXPECT_DOUBLE_EQ(*s0.ttft_ms_p50, 150);
  EXPECT_DOUBLE_EQ(*s0.tpot_ms_p50, 1000);
  EXPECT_DOUBLE_EQ(*s0.e2e_ms_p50, 1400);
  EXPECT_DOUBLE_EQ(s0.output_tokens_per_s, 3);
  const TimeSlice& s1 = l.by_slice[1];
  EXPECT_EQ(s1.started, 1);
  EXPECT_EQ(s1.failed, 1);
  EXPECT_EQ(s1.completed, 0);
  EXPECT_FALSE(s1.ttft_ms_p50.has_value());
  EXPECT_DOUBLE_EQ(s1.output_tokens_per_s, 1);
  const TimeSlice& s2 = l.by_slice[2];
  EXPECT_EQ(s2.start_s, 2);
  EXPECT_DOUBLE_EQ(s2.duration_s, 0.25);
  EXPECT_EQ(s2.started, 1);
  EXPECT_FALSE(s2.tpot_ms_p50.has_value());  // one token has no TPOT
  EXPECT_DOUBLE_EQ(s2.output_tokens_per_s, 8);
  // Into the results file and back (by_slice is recomputed from request_log and slice_s).
  const nlohmann::json j = to_json(results_of(load_point_of(l)));
  EXPECT_EQ(j["points"][0]["load"]["slice_s"], 1);
  EXPECT_EQ(j["points"][0]["by_slice"].size(), 3u);
  EXPECT_EQ(j["points"][0]["by_slice"][2]["output_tokens_per_s"], 8);
  EXPECT_EQ(to_json(results_from_json(j)), j);
  // Without --slice-s: none (null); a slice shorter than a millisecond in a file is refused.
  LoadResult plain = l;
  plain.slice_s = 0;
  summarize_load(plain);
  EXPECT_TRUE(plain.by_slice.empty());
  EXPECT_TRUE(to_json(results_of(load_point_of(plain)))["points"][0]["by_slice"].is_null());
  nlohmann::json bad = j;
  bad["points"][0]["load"]["slice_s"] = 1e-6;
  EXPECT_THROW(results_from_json(bad), Error);
}

TEST(LoadResult, TheLastSliceEndsAtTheLastByteIncluded) {
  // One request of 2 tokens at 0.5 and exactly 1.0 s, its end: one slice of 1 s holds both.
  LoadResult l;
  l.slice_s = 1;
  l.requests = {ok(0, 500, 1000, 4, 2, {500})};
  summarize_load(l);
  ASSERT_EQ(l.by_slice.size(), 1u);
  EXPECT_DOUBLE_EQ(l.by_slice[0].output_tokens_per_s, 2);
}
