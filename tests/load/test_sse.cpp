#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "llmbench/base/error.h"
#include "llmbench/load/sse.h"

using namespace llmbench;

namespace {

std::vector<std::string> events_of(const std::string& stream, std::size_t piece) {
  std::vector<std::string> out;
  SseParser p([&](std::string_view d) { out.emplace_back(d); });
  for (std::size_t at = 0; at < stream.size(); at += piece) p.feed(std::string_view(stream).substr(at, piece));
  EXPECT_FALSE(p.pending());
  return out;
}

}  // namespace

TEST(Sse, SameEventsWhereverTheBytesAreSplit) {
  const std::string stream =
      ": keep-alive comment\n\n"
      "event: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n"
      "data: first line\ndata:second line\n\n"
      "retry: 100\n\n"  // no data: no event
      "data: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "first line\nsecond line", "[DONE]"};
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) EXPECT_EQ(events_of(stream, piece), want) << piece;
}

TEST(Sse, CrOnlyLineEndsWhereverTheBytesAreSplit) {
  // The SSE spec's three line ends: CRLF, LF and CR alone (a CR then LF is one line end, even split).
  const std::string stream = "data: {\"a\":1}\r\rdata: x\rdata: y\r\n\r\n: c\r\rdata: [DONE]\n\r";
  const std::vector<std::string> want = {"{\"a\":1}", "x\ny", "[DONE]"};
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) EXPECT_EQ(events_of(stream, piece), want) << piece;
}

TEST(Sse, ALineOrEventBeyondTheCapThrowsA10MbEventPasses) {
  std::vector<std::size_t> sizes;
  SseParser p([&](std::string_view d) { sizes.push_back(d.size()); });
  const std::string big(10'000'000, 'x');
  p.feed("data: " + big + "\n\n");
  EXPECT_EQ(sizes, std::vector<std::size_t>{big.size()});
  // A line that never ends, fed in 1 MiB pieces: refused once past the cap, not grown further.
  SseParser endless([](std::string_view) {});
  const std::string mib(1 << 20, 'a');
  endless.feed("data: ");
  std::size_t fed = 0;
  EXPECT_THROW(
      {
        for (int i = 0; i < 64; ++i, fed += mib.size()) endless.feed(mib);
      },
      Error);
  EXPECT_LE(fed, kMaxSseEventBytes);
  // Many short data: lines of one event add up too.
  SseParser lines([](std::string_view) {});
  const std::string line = "data: " + std::string(1 << 16, 'b') + "\n";
  EXPECT_THROW(
      {
        for (int i = 0; i < 1024; ++i) lines.feed(line);
      },
      Error);
}

TEST(Sse, ALeadingByteOrderMarkIsDroppedWhereverTheBytesAreSplit) {
  // The SSE standard drops one UTF-8 BOM at the start of the stream; kept, it hid the first event
  // (field "\xEF\xBB\xBFdata") and moved the TTFT to the second token. Only there: a later one is data.
  const std::string stream = "\xEF\xBB\xBF" "data: a\n\ndata: \xEF\xBB\xBF" "b\n\n\xEF\xBB\xBF" "data: c\n\n";
  const std::vector<std::string> want = {"a", "\xEF\xBB\xBF" "b"};
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) EXPECT_EQ(events_of(stream, piece), want) << piece;
}

TEST(Sse, UsageCountsAreWholeNumbersInIntRange) {
  auto completion = [](const std::string& v) {
    return parse_chunk(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":)" + v + "}}").completion_tokens;
  };
  EXPECT_EQ(completion("7"), 7);
  EXPECT_EQ(completion("4.0"), 4);
  EXPECT_EQ(completion("0"), 0);
  EXPECT_EQ(completion("16777216"), 16777216);  // 2^24, the most --output-len takes
  // Beyond it no server's count is believed (INT_MAX gave 4e12 output tok/s): the client counts itself.
  for (const char* bad : {"-5", "4.5", "16777217", "2147483647", "3000000000", "1000000000000", "1e300", "\"4\"", "null",
                          "true"})
    EXPECT_FALSE(completion(bad).has_value()) << bad;
  EXPECT_FALSE(parse_chunk(R"({"usage":{"prompt_tokens":-1}})").prompt_tokens.has_value());
}

TEST(Sse, CachedTokensAreThePromptTokensDetails) {
  // OpenAI's usage.prompt_tokens_details.cached_tokens (vLLM, SGLang), under the same rules as the counts.
  auto cached = [](const std::string& details) {
    return parse_chunk(R"({"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":5,"prompt_tokens_details":)" +
                       details + "}}")
        .cached_tokens;
  };
  EXPECT_EQ(cached(R"({"cached_tokens":16})"), 16);
  EXPECT_EQ(cached(R"({"cached_tokens":0,"audio_tokens":0})"), 0);
  for (const char* bad : {R"({"cached_tokens":-1})", R"({"cached_tokens":2.5})", R"({"cached_tokens":"16"})",
                          R"({"cached_tokens":null})", R"({})", "null", "16", R"([16])"})
    EXPECT_FALSE(cached(bad).has_value()) << bad;
  EXPECT_FALSE(parse_chunk(R"({"usage":{"prompt_tokens":3,"cached_tokens":2}})").cached_tokens.has_value());  // not there
}

TEST(Sse, UnfinishedEventIsPendingNotDelivered) {
  std::vector<std::string> out;
  SseParser p([&](std::string_view d) { out.emplace_back(d); });
  p.feed("data: {\"x\": 1}\n");
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(p.pending());
  p.feed("\n");
  EXPECT_EQ(out.size(), 1u);
  EXPECT_FALSE(p.pending());
}

TEST(Sse, ChunksOfCompletionsAndChat) {
  StreamChunk c = parse_chunk(R"({"choices":[{"index":0,"text":" hello","finish_reason":null}]})");
  EXPECT_EQ(c.content, " hello");
  EXPECT_FALSE(c.done);
  c = parse_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]})");
  EXPECT_EQ(c.content, "hi");
  c = parse_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})");
  EXPECT_EQ(c.content, "");
  EXPECT_FALSE(c.token);
  c = parse_chunk(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34},)"
                  R"("llmbench_timing":{"queue":1.5,"prefill":2}})");
  EXPECT_EQ(c.prompt_tokens, 12);
  EXPECT_EQ(c.completion_tokens, 34);
  EXPECT_EQ(c.timing.at("queue"), 1.5);
  EXPECT_EQ(c.timing.at("prefill"), 2.0);
  EXPECT_TRUE(parse_chunk("[DONE]").done);
  EXPECT_TRUE(parse_chunk("[DONE] ").done);
  EXPECT_TRUE(parse_chunk("  [DONE]\t\r").done);
  EXPECT_THROW(parse_chunk("[DONE]x"), Error);
  EXPECT_EQ(parse_chunk(R"({"error":{"message":"overloaded"}})").error, "overloaded");
  EXPECT_THROW(parse_chunk(R"({"choices": [{"text": "cut)"), Error);
  EXPECT_THROW(parse_chunk("[1, 2]"), Error);
  // A whole (non-streamed) chat response: its message is the text, finish_reason and all.
  c = parse_chunk(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"all of it"},"finish_reason":"length"}],)"
                  R"("usage":{"prompt_tokens":3,"completion_tokens":9}})");
  EXPECT_EQ(c.content, "all of it");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.completion_tokens, 9);
}

TEST(Sse, ErrorObjectsOfEveryShapeKeepTheServersMessage) {
  EXPECT_EQ(parse_chunk(R"({"error":"CUDA out of memory"})").error, "CUDA out of memory");
  EXPECT_EQ(parse_chunk(R"({"object":"error","message":"engine dead","type":"InternalServerError","code":500})").error,
            "engine dead");
  EXPECT_EQ(parse_chunk(R"({"detail":"something broke"})").error, "something broke");
  EXPECT_EQ(parse_chunk(R"({"detail":[{"loc":["body"],"msg":"field required"}]})").error,
            R"([{"loc":["body"],"msg":"field required"}])");
  EXPECT_EQ(parse_chunk(R"({"error":{"code":500}})").error, R"({"code":500})");
  EXPECT_EQ(parse_chunk(R"({"error":""})").error, "(no message)");
  // Not errors: a null error, a chunk with choices and an unrelated detail field.
  EXPECT_TRUE(parse_chunk(R"({"error":null,"choices":[{"text":"a"}]})").error.empty());
  EXPECT_TRUE(parse_chunk(R"({"detail":"x","choices":[{"text":"a"}]})").error.empty());
  EXPECT_TRUE(parse_chunk(R"({"object":"text_completion","choices":[{"text":"a"}]})").error.empty());
}

TEST(Sse, ServerMessageIsOneShortLineOfText) {
  EXPECT_EQ(server_message(R"({"error":{"message":"min_tokens is not supported","type":"invalid_request_error"}})"),
            "min_tokens is not supported");
  EXPECT_EQ(server_message(R"({"message":"bad","code":400})"), "bad");
  EXPECT_EQ(server_message("\r\n  Internal Server Error\nTraceback (most recent call last):\n"), "Internal Server Error");
  EXPECT_EQ(server_message(R"({"error":"line one\nline\ttwo\u0001"})"), "line one line two");
  EXPECT_EQ(server_message("caf\xe9 \xc3\xa9"), "caf \xc3\xa9");  // a byte that is not UTF-8 is dropped
  // Sequences of the right shape that are not well-formed UTF-8 are dropped too (the JSON writer refuses them):
  // an overlong NUL, a surrogate, a code point above U+10FFFF (found by fuzz_load_sse).
  EXPECT_EQ(server_message("502 Bad \xc0\x80Gateway \xed\xa0\x80x \xf6\x9b\x9e\x8cy \xf4\x90\x80\x80z"),
            "502 Bad Gateway x y z");
  const std::string long_text = std::string(198, 'x') + "\xe2\x82\xac\xe2\x82\xac";
  EXPECT_EQ(server_message(long_text), std::string(198, 'x') + "...");  // never half a character
  EXPECT_EQ(server_message(""), "");
}

TEST(Sse, AnErrorLineMakesAnErrorEvent) {
  // llama.cpp: `error: {...}` and a blank line, no data field; TGI's named error event is data as usual.
  std::vector<std::string> events, errors;
  SseParser p([&](std::string_view d) { events.emplace_back(d); }, [&](std::string_view d) { errors.emplace_back(d); });
  p.feed("data: {\"a\":1}\n\nerror: {\"message\":\"too long\"}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
  EXPECT_EQ(errors, (std::vector<std::string>{"{\"message\":\"too long\"}"}));
}

TEST(Sse, OnlyMessageEventsAreDataErrorEventsAreErrors) {
  // sse-starlette's keep-alive: `event: ping` with data that is not JSON; the type lasts one event only.
  const std::string stream =
      "event: ping\r\ndata: 2024-05-01 12:00:00.000000\r\n\r\n"
      "data: {\"a\":1}\n\n"
      "event: message\ndata: {\"b\":2}\n\n"
      "event: ping\n\n"  // no data: nothing, and no type left over for the next event
      "data: {\"c\":3}\n\n"
      "event: error\ndata: {\"error\":\"Input validation error\"}\n\n"
      "event: Message\ndata: case matters\n\n"
      "data: [DONE]\n\n";
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    std::vector<std::string> events, errors;
    SseParser p([&](std::string_view d) { events.emplace_back(d); }, [&](std::string_view d) { errors.emplace_back(d); });
    for (std::size_t at = 0; at < stream.size(); at += piece) p.feed(std::string_view(stream).substr(at, piece));
    EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "[DONE]"})) << piece;
    EXPECT_EQ(errors, (std::vector<std::string>{"{\"error\":\"Input validation error\"}"})) << piece;
  }
}

TEST(Sse, ServerTimingHeader) {
  EXPECT_EQ(parse_server_timing("http_recv;dur=0.012, queue;dur=1.5, prefill;dur=3.25"),
            (std::map<std::string, double>{{"http_recv_ms", 0.012}, {"queue_ms", 1.5}, {"prefill_ms", 3.25}}));
  // Parameters in any order, entries without a duration or with a bad one skipped, never an error.
  EXPECT_EQ(parse_server_timing(R"(db;desc="x";dur=7 , cache;desc=hit, bad;dur=fast, inf;dur=inf,,  ;dur=1)"),
            (std::map<std::string, double>{{"db_ms", 7.0}}));
  EXPECT_TRUE(parse_server_timing("").empty());
  // A name that is no HTTP token (a byte that is not text: the results file could not be written) and a
  // duration that is not a plain number of ms in [0, 10^9] are dropped too.
  EXPECT_EQ(parse_server_timing("q\xe9;dur=1, a b;dur=2, hex;dur=0x10, neg;dur=-5, big;dur=1e308, nan;dur=nan, "
                                "ok;dur=2.5e1"),
            (std::map<std::string, double>{{"ok_ms", 25.0}}));
  // llmbench_timing, the streamed equivalent, by the same rule.
  const StreamChunk c = parse_chunk(R"({"choices":[],"llmbench_timing":{"queue":1.5,"x y":2,"neg":-1,"big":1e300,"s":"3"}})");
  EXPECT_EQ(c.timing, (std::map<std::string, double>{{"queue", 1.5}}));
}

TEST(Sse, ATokenEventCarriesTheTextFieldEvenEmpty) {
  auto token = [](const char* data) { return parse_chunk(data).token; };
  // One chunk per token: a token that decodes to no text still is one.
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"text":" hello","finish_reason":null}]})"));
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":null}]})"));
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]})"));
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"delta":{"content":"hi"}}]})"));
  // vLLM: the last token's text with the finish_reason.
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"text":" end","finish_reason":"length"}]})"));
  EXPECT_TRUE(token(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]})"));
  // Not tokens: the role announcement (OpenAI, llmbench serve), role-only, finish-only, usage-only, no text.
  EXPECT_FALSE(token(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})"));
  EXPECT_FALSE(token(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})"));
  EXPECT_FALSE(token(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"));
  EXPECT_FALSE(token(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})"));
  EXPECT_FALSE(token(R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}})"));
  EXPECT_FALSE(token(R"({"choices":[{"index":0,"text":null,"finish_reason":null}]})"));
  EXPECT_FALSE(token(R"({"id":"x"})"));
  EXPECT_FALSE(token("[DONE]"));
}

TEST(Sse, ReasoningTextIsGeneratedText) {
  // DeepSeek-R1: delta.reasoning_content with "content": null; newer vLLM: delta.reasoning.
  StreamChunk c = parse_chunk(R"({"choices":[{"index":0,"delta":{"reasoning_content":"Let me","content":null}}]})");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.content, "Let me");
  c = parse_chunk(R"({"choices":[{"index":0,"delta":{"reasoning":" think"},"finish_reason":null}]})");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.content, " think");
  // The first reasoning token may come with the role announcement.
  c = parse_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"Hmm"}}]})");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.content, "Hmm");
  // Empty or null reasoning alongside no text is no token.
  EXPECT_FALSE(parse_chunk(R"({"choices":[{"index":0,"delta":{"reasoning_content":"","content":null}}]})").token);
  EXPECT_FALSE(parse_chunk(R"({"choices":[{"index":0,"delta":{"reasoning":null,"role":"assistant"}}]})").token);
  // A whole response: the thinking counts with the answer (or alone).
  c = parse_chunk(R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"let me think"},)"
                  R"("finish_reason":"length"}]})");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.content, "let me think");
  c = parse_chunk(R"({"choices":[{"index":0,"message":{"content":" 42","reasoning":"so"},"finish_reason":"stop"}]})");
  EXPECT_EQ(c.content, "so 42");
  // vLLM sends both fields, reasoning_content a copy of reasoning: the text counts once.
  c = parse_chunk(R"({"choices":[{"index":0,"delta":{"content":null,"reasoning":" why","reasoning_content":" why"}}]})");
  EXPECT_TRUE(c.token);
  EXPECT_EQ(c.content, " why");
  c = parse_chunk(R"({"choices":[{"index":0,"message":{"content":"7","reasoning":"a","reasoning_content":"a"}}]})");
  EXPECT_EQ(c.content, "a7");
}

TEST(Sse, ParseRateIsMeasured) {
  // The figure itself is not a test's business (a loaded CI box is no benchmark): `llmbench load` records it in
  // every point (client.events_per_s) and warns under 50,000. Here: it measures and returns a rate.
  const double rate = measure_parse_rate(2000);
  RecordProperty("events_per_s", std::to_string(rate));
  std::printf("[ info     ] SSE parse rate: %.0f events/s\n", rate);
  EXPECT_TRUE(std::isfinite(rate));
  EXPECT_GT(rate, 0);
}

TEST(Sse, SplitGapsGivesEachEventItsShareOfTheOutputTokens) {
  // 4 events of 4 tokenizer tokens each, usage 8: 4 extra tokens over extras {3,3,3,3} -> 2 tokens an
  // event; events 2..4 give 2 gaps of half their gap (6 ITLs, not 12).
  EXPECT_EQ(split_gaps({20, 20, 20}, {4, 4, 4, 4}, 8), (std::vector<double>{10, 10, 10, 10, 10, 10}));
  // extras {1,2,0,3}, 3 to give: shares 0.5, 1, 0, 1.5 -> floors {0,1,0,1}, the one left to the
  // earliest largest remainder (event 0) -> tokens {2,2,1,2}; event 0's tokens give no gap.
  EXPECT_EQ(split_gaps({10, 20, 30}, {2, 3, 1, 4}, 7), (std::vector<double>{5, 5, 20, 15, 15}));
  // usage above the tokenizer: all 8 extra tokens to the one event with extras -> 9 gaps of 12/9.
  EXPECT_EQ(split_gaps({12}, {1, 3}, 10), std::vector<double>(9, 12.0 / 9));
  // One token an event, or no event with more than one tokenizer token: the gaps as they are.
  EXPECT_EQ(split_gaps({7, 8}, {4, 4, 4}, 3), (std::vector<double>{7, 8}));
  EXPECT_EQ(split_gaps({7, 8}, {1, 0, 1}, 9), (std::vector<double>{7, 8}));
  EXPECT_THROW(split_gaps({7}, {1, 1, 1}, 3), Error);
  // The text holds 1 + 3 = 4 tokens: usage up to 4 x 4 = 16 is split (15 gaps of 12/15), beyond it the
  // gaps as they are (a count of 2^24 made 2^24 ITLs of one request).
  EXPECT_EQ(split_gaps({12}, {1, 3}, 16), std::vector<double>(15, 12.0 / 15));
  EXPECT_EQ(split_gaps({12}, {1, 3}, 17), std::vector<double>{12});
  EXPECT_EQ(split_gaps({12}, {1, 3}, 1 << 24), std::vector<double>{12});
}
