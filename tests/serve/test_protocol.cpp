#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmbench/serve/metrics.h"
#include "llmbench/serve/openai.h"
#include "llmbench/serve/sse.h"
#include "llmbench/serve/text_stream.h"
#include "llmbench/serve/timing.h"

namespace llmbench::serve {
namespace {

using nlohmann::json;

int status_of(std::string_view body, Endpoint e = Endpoint::completions) {
  try {
    parse_request(body, e);
  } catch (const ApiError& err) {
    return err.status;
  }
  return 200;
}

std::string code_of(std::string_view body, Endpoint e = Endpoint::completions) {
  try {
    parse_request(body, e);
  } catch (const ApiError& err) {
    return err.code + ":" + err.param;
  }
  return "ok";
}

TEST(OpenAiParse, Completions) {
  CompletionRequest r = parse_request(
      R"({"model":"m","prompt":"hi","max_tokens":5,"temperature":0,"top_p":0.5,"seed":3,"stop":["a","bc"],
          "ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"n":1,"user":"x","logprobs":null})",
      Endpoint::completions);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(*r.prompt_text, "hi");
  EXPECT_EQ(*r.max_tokens, 5);
  EXPECT_EQ(r.temperature, 0);
  EXPECT_EQ(r.top_p, 0.5);
  EXPECT_EQ(*r.seed, 3u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.ignore_eos && r.stream && r.include_usage);

  r = parse_request(R"({"prompt":[1,2,3],"stop":"x","max_tokens":16.0})", Endpoint::completions);
  EXPECT_EQ(r.prompt_ids, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(*r.max_tokens, 16);
  EXPECT_EQ(r.temperature, 1);  // OpenAI's default
  r = parse_request(R"({"prompt":[[4,5]]})", Endpoint::completions);
  EXPECT_EQ(r.prompt_ids, (std::vector<std::int64_t>{4, 5}));
  r = parse_request(R"({"prompt":["one"]})", Endpoint::completions);
  EXPECT_EQ(*r.prompt_text, "one");
}

TEST(OpenAiParse, Chat) {
  CompletionRequest r = parse_request(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
          "max_completion_tokens":7})",
      Endpoint::chat);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(*r.max_tokens, 7);
}

// Both given: max_completion_tokens (max_tokens is deprecated for chat), as vLLM does.
TEST(OpenAiParse, MaxCompletionTokensWinsOverMaxTokens) {
  const char* both = R"({"messages":[{"role":"user","content":"a"}],"max_tokens":9,"max_completion_tokens":7})";
  EXPECT_EQ(*parse_request(both, Endpoint::chat).max_tokens, 7);
  EXPECT_EQ(*parse_request(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":9})", Endpoint::chat).max_tokens, 9);
  EXPECT_EQ(code_of(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":9,"max_completion_tokens":0})",
                    Endpoint::chat),
            "invalid_value:max_completion_tokens");
}

TEST(OpenAiParse, BadInputs) {
  EXPECT_EQ(code_of("{"), "invalid_json:");
  EXPECT_EQ(code_of("[1]"), "invalid_json:");
  auto message_of = [](const char* body) {
    try {
      parse_request(body, Endpoint::completions);
    } catch (const ApiError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message_of(""), "the body is empty (expected a JSON object)");
  EXPECT_EQ(message_of(R"({"max_tokens":1e309})"), "the body is not valid JSON: number overflow parsing '1e309'");
  EXPECT_EQ(message_of(R"({"a" 1})").rfind("the body is not valid JSON: parse error at line 1, column 6: ", 0), 0u);
  EXPECT_EQ(message_of(R"({"prompt":"x","temperature":2.0000001})"), "'temperature' must be in [0, 2], got 2.0000001");
  EXPECT_EQ(message_of(R"({"prompt":"x","max_tokens":99999999999999999999})"), "'max_tokens' is out of range");
  EXPECT_EQ(code_of(R"({"prompt":"x","max_tokens":"5"})"), "invalid_type:max_tokens");
  EXPECT_EQ(code_of(R"({"prompt":"x","max_tokens":0})"), "invalid_value:max_tokens");
  EXPECT_EQ(code_of(R"({"prompt":"x","max_tokens":-3})"), "invalid_value:max_tokens");
  EXPECT_EQ(code_of(R"({"prompt":"x","max_tokens":1.5})"), "invalid_type:max_tokens");
  EXPECT_EQ(code_of(R"({"prompt":"x","temperature":"hot"})"), "invalid_type:temperature");
  EXPECT_EQ(code_of(R"({"prompt":"x","temperature":3})"), "invalid_value:temperature");
  EXPECT_EQ(code_of(R"({"prompt":"x","top_p":0})"), "invalid_value:top_p");
  EXPECT_EQ(code_of(R"({"prompt":"x","n":2})"), "invalid_value:n");
  EXPECT_EQ(code_of(R"({"prompt":"x","stop":5})"), "invalid_type:stop");
  EXPECT_EQ(code_of(R"({"prompt":"x","stop":[""]})"), "invalid_value:stop");
  EXPECT_EQ(code_of(R"({"prompt":"x","stream":"yes"})"), "invalid_type:stream");
  EXPECT_EQ(code_of(R"({"prompt":"x","model":7})"), "invalid_type:model");
  EXPECT_EQ(code_of(R"({"prompt":"x","logprobs":2})"), "unsupported:logprobs");
  EXPECT_EQ(code_of(R"({"prompt":"x","min_tokens":-1})"), "invalid_value:min_tokens");
  EXPECT_EQ(code_of(R"({"prompt":"x","max_tokens":3,"min_tokens":4})"), "invalid_value:min_tokens");
  EXPECT_EQ(parse_request(R"({"prompt":"x","max_tokens":3,"min_tokens":3})", Endpoint::completions).min_tokens, 3);
  EXPECT_EQ(code_of(R"({"max_tokens":3})"), "missing_field:prompt");
  EXPECT_EQ(code_of(R"({"prompt":{"a":1}})"), "invalid_type:prompt");
  EXPECT_EQ(code_of(R"({"prompt":[1,"a"]})"), "invalid_type:prompt");
  EXPECT_EQ(code_of(R"({"prompt":["a","b"]})"), "invalid_value:prompt");
  EXPECT_EQ(code_of(R"({"prompt":"x"})", Endpoint::chat), "missing_field:messages");
  EXPECT_EQ(code_of(R"({"messages":[]})", Endpoint::chat), "invalid_type:messages");
  EXPECT_EQ(code_of(R"({"messages":["hi"]})", Endpoint::chat), "invalid_type:messages[0]");
  EXPECT_EQ(code_of(R"({"messages":[{"role":"tool","content":"x"}]})", Endpoint::chat), "invalid_value:messages[0].role");
  EXPECT_EQ(code_of(R"({"messages":[{"role":"user","content":3}]})", Endpoint::chat), "invalid_type:messages[0].content");
  EXPECT_EQ(status_of("\xff\xfe"), 400);
}

std::string message_of(std::string_view body, Endpoint e = Endpoint::completions) {
  try {
    parse_request(body, e);
  } catch (const ApiError& err) {
    return err.what();
  }
  return "(no error)";
}

// One range for top_p whichever side it leaves; a refused role's message lists every accepted one.
TEST(OpenAiParse, MessagesNameTheAcceptedValues) {
  EXPECT_EQ(message_of(R"({"prompt":"x","top_p":0})"), "'top_p' must be in (0, 1], got 0");
  EXPECT_EQ(message_of(R"({"prompt":"x","top_p":1.5})"), "'top_p' must be in (0, 1], got 1.5");
  EXPECT_EQ(code_of(R"({"prompt":"x","top_p":1.5})"), "invalid_value:top_p");
  EXPECT_EQ(code_of(R"({"prompt":"x","top_p":"x"})"), "invalid_type:top_p");
  EXPECT_EQ(message_of(R"({"messages":[{"role":"tool","content":"x"}]})", Endpoint::chat),
            "role 'tool' is not supported (system, developer, user, assistant)");
  EXPECT_EQ(parse_request(R"({"messages":[{"role":"developer","content":"x"}]})", Endpoint::chat).messages[0].role,
            "system");
}

TEST(OpenAiParse, ContextLimits) {
  CompletionRequest r = parse_request(R"({"prompt":[1,2,3],"max_tokens":5})", Endpoint::completions);
  EXPECT_EQ(resolve_max_tokens(r, 3, 8), 5);
  EXPECT_THROW(resolve_max_tokens(r, 3, 7), ApiError);  // 3 + 5 > 7
  EXPECT_THROW(resolve_max_tokens(r, 8, 8), ApiError);
  r.max_tokens.reset();
  EXPECT_EQ(resolve_max_tokens(r, 3, 100), 16);
  EXPECT_EQ(resolve_max_tokens(r, 90, 100), 10);
  r.endpoint = Endpoint::chat;
  EXPECT_EQ(resolve_max_tokens(r, 90, 100), 10);
  EXPECT_EQ(resolve_max_tokens(r, 3, 100), 97);
}

TEST(OpenAiParse, PromptIdsChecked) {
  auto tok = tokenizer_from_json(tiny_tokenizer_json(), tiny_tokenizer_config_json(), "tiny");
  CompletionRequest r = parse_request(R"({"prompt":[0,511]})", Endpoint::completions);
  EXPECT_EQ(prompt_tokens(r, *tok, 512), (std::vector<std::int64_t>{0, 511}));
  r = parse_request(R"({"prompt":[512]})", Endpoint::completions);
  EXPECT_THROW(prompt_tokens(r, *tok, 512), ApiError);
  r = parse_request(R"({"prompt":[-1]})", Endpoint::completions);
  EXPECT_THROW(prompt_tokens(r, *tok, 512), ApiError);
  r = parse_request(R"({"prompt":[]})", Endpoint::completions);
  EXPECT_THROW(prompt_tokens(r, *tok, 512), ApiError);
  r = parse_request(R"({"prompt":"hello world"})", Endpoint::completions);
  std::vector<TokenId> want = tok->encode("hello world", true);
  EXPECT_EQ(prompt_tokens(r, *tok, 512), std::vector<std::int64_t>(want.begin(), want.end()));
}

// Our JSON writer against nlohmann's parser: every byte that needs escaping, and UTF-8 untouched.
TEST(OpenAiJson, EscapingRoundTrips) {
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(char(c));
  all += "é€😀\"\\";
  std::string out;
  append_json_string(out, all);
  EXPECT_EQ(json::parse(out).get<std::string>(), all);
}

TEST(OpenAiJson, ResponsesAreOpenAiShaped) {
  json c = json::parse(completion_json(Endpoint::completions, "cmpl-1", 7, "m", "a\"b", "length", {3, 2}, ""));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "a\"b");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c["usage"], (json{{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}));
  json chat = json::parse(completion_json(Endpoint::chat, "chatcmpl-1", 7, "m", "hi", "stop", {1, 1}, "{\"x\":1}"));
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"], (json{{"role", "assistant"}, {"content", "hi"}}));
  EXPECT_EQ(chat["llmbench_timing"]["x"], 1);

  ChunkFormat f(Endpoint::chat, "chatcmpl-9", 5, "m\n");
  json role = json::parse(f.role_chunk());
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["model"], "m\n");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  f.append_text(text, "x\ty");
  EXPECT_EQ(json::parse(text)["choices"][0]["delta"]["content"], "x\ty");
  EXPECT_TRUE(json::parse(text)["choices"][0]["finish_reason"].is_null());
  json fin = json::parse(f.finish_chunk("stop", ",\"llmbench_timing\":{}"));
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(fin["llmbench_timing"].is_object());
  json usage = json::parse(f.usage_chunk({4, 6}, ""));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 10);
  ChunkFormat g(Endpoint::completions, "cmpl-9", 5, "m");
  text.clear();
  g.append_text(text, "z");
  EXPECT_EQ(json::parse(text)["choices"][0]["text"], "z");

  json err = json::parse(error_json(ApiError(404, "invalid_request_error", "model_not_found", "no such model", "model")));
  EXPECT_EQ(err["error"]["message"], "no such model");
  EXPECT_EQ(err["error"]["type"], "invalid_request_error");
  EXPECT_EQ(err["error"]["code"], "model_not_found");
  EXPECT_EQ(err["error"]["param"], "model");
}

TEST(Sse, ChunkFraming) {
  std::string out;
  append_sse_event(out, "{\"a\":1}");
  EXPECT_EQ(out, "f\r\ndata: {\"a\":1}\n\n\r\n");  // 15 bytes
  out.clear();
  append_sse_done(out);
  EXPECT_EQ(out, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
}

TEST(Timing, HeaderAndJson) {
  StageTimes t{1.5, 2, 0.25, 10, 20, 0.125};
  EXPECT_EQ(server_timing_header(t),
            "http_recv;dur=1.500, queue;dur=2.000, tokenize;dur=0.250, prefill;dur=10.000, decode;dur=20.000, "
            "stream;dur=0.125");
  json j = json::parse(timing_json(t));
  EXPECT_EQ(j["prefill_ms"], 10);
  EXPECT_EQ(j.size(), 6u);
}

class TextStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> tok = tokenizer_from_json(tiny_tokenizer_json(), tiny_tokenizer_config_json(), "tiny");
  std::vector<TokenId> ids(const std::string& text) { return tok->encode(text, false); }
  std::string run(const std::vector<TokenId>& ids, std::vector<std::string> stop, bool* stopped, std::vector<std::string>* pieces = nullptr) {
    TextStream s(*tok, std::move(stop));
    std::string out;
    for (TokenId id : ids) {
      std::string p = s.push(id);
      if (pieces) pieces->push_back(p);
      out += p;
      if (s.stopped()) break;
    }
    out += s.finish();
    *stopped = s.stopped();
    return out;
  }
};

TEST_F(TextStreamTest, NoStopEqualsDecode) {
  const std::string text = "Hello, wörld! 😀 streaming text, piece by piece.";
  bool stopped = false;
  EXPECT_EQ(run(ids(text), {}, &stopped), tok->decode(ids(text), true));
  EXPECT_FALSE(stopped);
}

TEST_F(TextStreamTest, StopStringCutsTextAcrossTokens) {
  const std::string text = "the quick brown fox jumps over the lazy dog";
  bool stopped = false;
  EXPECT_EQ(run(ids(text), {"fox ju"}, &stopped), "the quick brown ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run(ids(text), {"zzz", "lazy"}, &stopped), "the quick brown fox jumps over the ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run(ids(text), {"cat"}, &stopped), text);
  EXPECT_FALSE(stopped);
}

TEST_F(TextStreamTest, HoldsBackAPossibleStopPrefix) {
  // "ab" might become "abc": it is not sent until the next text shows it does not.
  const std::string text = "xx ab ab abd";
  std::vector<std::string> pieces;
  bool stopped = false;
  EXPECT_EQ(run(ids(text), {"abc"}, &stopped, &pieces), text);
  for (const auto& p : pieces) EXPECT_EQ(p.find("ab", p.size() >= 2 ? p.size() - 2 : 0), std::string::npos) << p;
  EXPECT_EQ(run(ids("xx abc"), {"abc"}, &stopped), "xx ");
  EXPECT_TRUE(stopped);
}

TEST(Metrics, PrometheusText) {
  Metrics m;
  m.ttft.observe(0.003);
  m.ttft.observe(0.2);
  m.ttft.observe(100);
  m.count_response(200);
  m.count_response(200);
  m.count_response(400);
  m.count_finish("length");
  m.generation_tokens += 12;
  EngineStats e;
  e.running = 3;
  e.slots_total = 8;
  e.prefill_passes = 4;
  e.prefill_requests = 10;
  e.prefill_tokens = 5000;
  e.prefill_padded_tokens = 5120;
  e.last_prefill_batch = 2;
  e.busy_seconds = 12.5;
  e.step_seconds = 9.25;
  e.prefill_seconds = 3.125;
  const std::string text = m.render(e);
  auto has = [&](const std::string& line) { return text.find("\n" + line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0")) << text;
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_bucket{le=\"60\"} 2"));
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_count 3"));
  EXPECT_TRUE(has("llmbench_time_to_first_token_seconds_sum 100.203"));
  EXPECT_TRUE(has("llmbench_requests_total{code=\"200\"} 2"));
  EXPECT_TRUE(has("llmbench_requests_total{code=\"400\"} 1"));
  EXPECT_TRUE(has("llmbench_request_finish_total{reason=\"length\"} 1"));
  EXPECT_TRUE(has("llmbench_generation_tokens_total 12"));
  EXPECT_TRUE(has("llmbench_kv_cache_slots_used 3"));
  EXPECT_TRUE(has("# TYPE llmbench_inter_token_latency_seconds histogram"));
  EXPECT_TRUE(has("# TYPE llmbench_prefill_passes_total counter"));
  EXPECT_TRUE(has("llmbench_prefill_passes_total 4"));
  EXPECT_TRUE(has("llmbench_prefill_requests_total 10"));
  EXPECT_TRUE(has("llmbench_prefill_tokens_total 5000"));
  EXPECT_TRUE(has("llmbench_prefill_padded_tokens_total 5120"));
  EXPECT_TRUE(has("llmbench_prefill_batch_size 2"));
  EXPECT_TRUE(has("# TYPE llmbench_engine_busy_seconds_total counter"));
  EXPECT_TRUE(has("llmbench_engine_busy_seconds_total 12.5"));
  EXPECT_TRUE(has("llmbench_engine_step_seconds_total 9.25"));
  EXPECT_TRUE(has("llmbench_engine_prefill_seconds_total 3.125"));
  EXPECT_TRUE(has("llmbench_tensor_parallel_size{backend=\"none\"} 1")) << text;
  e.tp = 2;
  e.tp_backend = "nccl";
  const std::string tp = m.render(e);
  EXPECT_NE(tp.find("\nllmbench_tensor_parallel_size{backend=\"nccl\"} 2\n"), std::string::npos) << tp;
}

}  // namespace
}  // namespace llmbench::serve
