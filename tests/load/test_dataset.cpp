#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/load/dataset.h"
#include "llmbench/tokenizer/tokenizer.h"

using namespace llmbench;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/llmbench-load-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST(Dataset, ParsesSpec) {
  EXPECT_EQ(parse_dataset("synthetic").kind, "synthetic");
  EXPECT_EQ(parse_dataset("sharegpt:/a/b.json").path, "/a/b.json");
  EXPECT_EQ(parse_dataset("jsonl:x.jsonl").kind, "jsonl");
  for (const char* bad : {"", "sharegpt", "sharegpt:", "csv:x", "random"}) EXPECT_THROW(parse_dataset(bad), UsageError);
}

TEST(Dataset, SyntheticPromptsHaveExactlyTheTokenCount) {
  const auto tok = load_tokenizer("tiny");
  for (int len : {1, 7, 128, 300}) {
    const auto prompts = synthetic_prompts(*tok, 5, len, 9, 42);
    ASSERT_EQ(prompts.size(), 5u);
    for (const auto& p : prompts) {
      EXPECT_EQ(tok->encode(p.text, false).size(), std::size_t(len));  // independent re-count
      EXPECT_EQ(p.prompt_tokens, len);
      EXPECT_EQ(p.output_len, 9);
    }
    EXPECT_NE(prompts[0].text, prompts[1].text);
  }
  EXPECT_EQ(synthetic_prompts(*tok, 2, 32, 1, 5)[1].text, synthetic_prompts(*tok, 2, 32, 1, 5)[1].text);
}

TEST(Dataset, SyntheticLengthsSpreadOverTheRange) {
  EXPECT_EQ(length_range(100, 0), (std::pair<int, int>{100, 100}));
  EXPECT_EQ(length_range(100, 0.5), (std::pair<int, int>{50, 150}));
  EXPECT_EQ(length_range(7, 0.3), (std::pair<int, int>{4, 9}));  // int(4.9), int(9.1): vLLM's truncation
  EXPECT_EQ(length_range(1, 0.99), (std::pair<int, int>{1, 1}));  // never below one token
  const auto tok = load_tokenizer("tiny");
  const auto prompts = synthetic_prompts(*tok, 400, 40, 10, 3, {}, 0.5);
  ASSERT_EQ(prompts.size(), 400u);
  std::set<int> inputs, outputs;
  double input_sum = 0;
  for (const auto& p : prompts) {
    EXPECT_EQ(tok->encode(p.text, false).size(), std::size_t(p.prompt_tokens));  // still exact, per prompt
    EXPECT_GE(p.prompt_tokens, 20);
    EXPECT_LE(p.prompt_tokens, 60);
    EXPECT_GE(p.output_len, 5);
    EXPECT_LE(p.output_len, 15);
    inputs.insert(p.prompt_tokens);
    outputs.insert(p.output_len);
    input_sum += p.prompt_tokens;
  }
  // Uniform over 41 input and 11 output values: 400 draws hit the ends and nearly all of them, mean near 40.
  EXPECT_TRUE(inputs.count(20) && inputs.count(60)) << inputs.size();
  EXPECT_GE(inputs.size(), 38u);
  EXPECT_EQ(outputs.size(), 11u);
  EXPECT_NEAR(input_sum / 400, 40, 2.0);
  // Same seed, same prompts; ratio 0 leaves the prompts of before (their own random stream).
  EXPECT_EQ(synthetic_prompts(*tok, 3, 40, 10, 3, {}, 0.5)[2].text, prompts[2].text);
  EXPECT_EQ(synthetic_prompts(*tok, 3, 40, 10, 3, {}, 0)[1].text, synthetic_prompts(*tok, 3, 40, 10, 3)[1].text);
}

TEST(Dataset, SyntheticPromptsShareAnExactPrefix) {
  for (const char* source : {"tiny", "qwen3"}) {
    // The Qwen3 tokenizer (byte-level BPE, merges across the join) when the CI cache has it.
    const std::string dir = std::string(LLMBENCH_TEST_DATA) + "/../../.cache/tokenizers/" + source;  // scripts/fetch-tokenizers.sh
    if (std::string(source) != "tiny" && !std::filesystem::exists(dir + "/tokenizer.json")) continue;
    const auto tok = load_tokenizer(std::string(source) == "tiny" ? "tiny" : dir);
    const auto prompts = synthetic_prompts(*tok, 20, 12, 4, 9, {}, 0.5, 30);
    // The prefix: the longest common start of all texts, at least 30 tokens' worth.
    std::string common = prompts[0].text;
    for (const auto& p : prompts) {
      std::size_t k = 0;
      while (k < common.size() && k < p.text.size() && common[k] == p.text[k]) ++k;
      common.resize(k);
      EXPECT_EQ(tok->encode(p.text, false).size(), std::size_t(p.prompt_tokens)) << source;  // exact, in all
      EXPECT_GE(p.prompt_tokens, 30 + 6);
      EXPECT_LE(p.prompt_tokens, 30 + 18);
    }
    EXPECT_GE(tok->encode(common, false).size(), 29u) << source << ": '" << common << "'";
    // Its own stream: the tails, lengths and a seed's prefix do not move the prompts without one.
    EXPECT_EQ(synthetic_prompts(*tok, 2, 12, 4, 9, {}, 0.5, 0)[1].text, synthetic_prompts(*tok, 2, 12, 4, 9, {}, 0.5)[1].text);
    EXPECT_NE(synthetic_prompts(*tok, 1, 12, 4, 10, {}, 0, 30)[0].text.substr(0, 20), prompts[0].text.substr(0, 20));
  }
}

TEST(Dataset, ShareGpt) {
  TempDir dir;
  const auto tok = load_tokenizer("tiny");
  const std::string path = dir.write("sg.json", R"([
    {"id": "a", "conversations": [{"from": "human", "value": "What is two plus two?"},
                                   {"from": "gpt", "value": "Four, of course."}, {"from": "human", "value": "x"}]},
    {"id": "one turn", "conversations": [{"from": "human", "value": "alone"}]},
    {"id": "no conversations"},
    {"id": "b", "conversations": [{"from": "human", "value": "Hello"}, {"from": "gpt", "value": "Hi there"}]}
  ])");
  const auto prompts = load_sharegpt(path, *tok, 0);
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].text, "What is two plus two?");
  EXPECT_EQ(prompts[0].prompt_tokens, int(tok->encode("What is two plus two?", false).size()));
  EXPECT_EQ(prompts[0].output_len, int(tok->encode("Four, of course.", false).size()));
  EXPECT_EQ(prompts[1].text, "Hello");
  EXPECT_EQ(load_sharegpt(path, *tok, 17)[1].output_len, 17);
  EXPECT_THROW(load_sharegpt(dir.write("bad.json", "[{"), *tok, 0), UsageError);
  EXPECT_THROW(load_sharegpt(dir.write("obj.json", "{}"), *tok, 0), UsageError);
  EXPECT_THROW(load_sharegpt(dir.write("empty.json", "[]"), *tok, 0), UsageError);
  EXPECT_THROW(load_sharegpt(dir.path + "/missing.json", *tok, 0), UsageError);
}

TEST(Dataset, Jsonl) {
  TempDir dir;
  const auto tok = load_tokenizer("tiny");
  const auto prompts = load_jsonl(
      dir.write("d.jsonl", "{\"prompt\": \"one two\", \"output_len\": 5}\n\n{\"prompt\": \"three\", \"output_len\": 1}\n"),
      *tok, 0);
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].text, "one two");
  EXPECT_EQ(prompts[0].output_len, 5);
  EXPECT_EQ(prompts[1].output_len, 1);
  EXPECT_EQ(prompts[1].prompt_tokens, int(tok->encode("three", false).size()));
  const std::string bad = dir.write("bad.jsonl", "{\"prompt\": \"ok\", \"output_len\": 5}\n{\"prompt\": 3}\n");
  try {
    load_jsonl(bad, *tok, 0);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_jsonl(dir.write("nolen.jsonl", "{\"prompt\": \"ok\"}\n"), *tok, 0), UsageError);
  EXPECT_EQ(load_jsonl(dir.write("nolen2.jsonl", "{\"prompt\": \"ok\"}\n"), *tok, 3)[0].output_len, 3);
  EXPECT_THROW(load_jsonl(dir.write("text.jsonl", "not json\n"), *tok, 0), UsageError);
}

TEST(Dataset, JsonlSaysInvalidUtf8AndRefusesOutOfRangeLengths) {
  TempDir dir;
  const auto tok = load_tokenizer("tiny");
  auto message = [&](const std::string& name, const std::string& text) -> std::string {
    try {
      load_jsonl(dir.write(name, text), *tok, 0);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("u.jsonl", "{\"prompt\": \"ok\", \"output_len\": 2}\n{\"prompt\": \"caf\xe9\", \"output_len\": 2}\n")
                .find("u.jsonl:2: invalid UTF-8"),
            std::string::npos);
  for (const char* len : {"99999999999", "-1", "0", "2.5", "1e30"})
    EXPECT_NE(message("l.jsonl", cat("{\"prompt\": \"ok\", \"output_len\": ", len, "}\n")).find("l.jsonl:1: \"output_len\""),
              std::string::npos)
        << len;
  EXPECT_EQ(load_jsonl(dir.write("ok.jsonl", "{\"prompt\": \"ok\", \"output_len\": 16777216}\n"), *tok, 0)[0].output_len,
            16777216);
}

TEST(Dataset, SyntheticPromptsStopWhenAsked) {
  const auto tok = load_tokenizer("tiny");
  int polls = 0;
  const auto prompts = synthetic_prompts(*tok, 1000000, 8, 1, 0, [&] { return ++polls > 3; });
  EXPECT_EQ(prompts.size(), 3u);
}

namespace {

// The text two prompts share from their start.
std::string common_start(const std::string& a, const std::string& b) {
  std::size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return a.substr(0, k);
}

}  // namespace

TEST(Dataset, TraceRequestsInArrivalOrderWithExactLengthsAndSharedBlocks) {
  TempDir dir;
  // Out of order in the file, a tie (lines 4 and 5 keep their file order), a given prompt, no hash ids.
  const std::string path = dir.write("t.jsonl",
                                     "{\"timestamp\": 5000, \"input_length\": 20, \"output_length\": 4, \"hash_ids\": [7, 1, 2]}\n"
                                     "\n"
                                     "{\"timestamp\": 4000, \"input_length\": 17, \"output_length\": 3, \"hash_ids\": [7, 1, 3]}\n"
                                     "{\"timestamp\": 5500, \"prompt\": \"a given prompt\", \"output_length\": 2, \"session\": 1}\n"
                                     "{\"timestamp\": 5500, \"input_length\": 5, \"output_length\": 6}\n"
                                     "{\"timestamp\": 4000.5, \"input_length\": 8, \"output_length\": 1, \"hash_ids\": [9]}\n");
  for (const char* source : {"tiny", "qwen3"}) {
    const std::string tdir = std::string(LLMBENCH_TEST_DATA) + "/../../.cache/tokenizers/" + source;
    if (std::string(source) != "tiny" && !std::filesystem::exists(tdir + "/tokenizer.json")) continue;
    const auto tok = load_tokenizer(std::string(source) == "tiny" ? "tiny" : tdir);
    TraceSelection select;
    select.block_size = 8;
    select.seed = 3;
    const auto trace = load_trace(path, *tok, select);
    ASSERT_EQ(trace.size(), 5u);
    const std::vector<double> arrivals = {0, 0.5, 1000, 1500, 1500};  // from the earliest, 4000 ms
    const std::vector<int> outputs = {3, 1, 4, 2, 6}, inputs = {17, 8, 20, 0, 5};
    for (std::size_t i = 0; i < trace.size(); ++i) {
      EXPECT_EQ(trace[i].arrival_ms, arrivals[i]) << source << " " << i;
      EXPECT_EQ(trace[i].prompt.output_len, outputs[i]) << source << " " << i;
      EXPECT_EQ(tok->encode(trace[i].prompt.text, false).size(), std::size_t(trace[i].prompt.prompt_tokens)) << source << " " << i;
      if (inputs[i] > 0) {
        EXPECT_EQ(trace[i].prompt.prompt_tokens, inputs[i]) << source << " " << i;
      }
    }
    EXPECT_EQ(trace[3].prompt.text, "a given prompt");
    // Hash ids [7, 1, ...] twice: the same first two blocks (16 tokens' text, give or take the seam's merge);
    // [9] starts otherwise.
    const std::string shared = common_start(trace[0].prompt.text, trace[2].prompt.text);
    EXPECT_GE(tok->encode(shared, false).size(), 15u) << source << ": '" << shared << "'";
    EXPECT_LT(tok->encode(common_start(trace[0].prompt.text, trace[1].prompt.text), false).size(), 3u) << source;
    EXPECT_NE(trace[2].prompt.text.substr(shared.size()), trace[0].prompt.text.substr(shared.size()));
    // Deterministic for a seed; another seed, other text.
    EXPECT_EQ(load_trace(path, *tok, select)[4].prompt.text, trace[4].prompt.text);
    select.seed = 4;
    EXPECT_NE(load_trace(path, *tok, select)[0].prompt.text, trace[0].prompt.text);
  }
}

TEST(Dataset, TracePromptsStayExactWhereSeamsChangeTheCount) {
  // Three blocks of 8 with one token in the last: where the seams between blocks make more tokens than 16 (a
  // byte-level BPE's pre-tokenizer splits differently across a join), the prompt is still cut to exactly 17,
  // and prompts whose hash ids start alike still share that text. The Mooncake traces have such lines
  // (conversation_trace.jsonl line 86: 21 blocks and 1 token, 10,756 tokens in the first 21 with Qwen3's).
  TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += cat("{\"timestamp\": ", i, ", \"input_length\": 17, \"output_length\": 1, \"hash_ids\": [0, ", 1 + i % 5, ", ",
                100 + i, "]}\n");
  const std::string path = dir.write("seams.jsonl", text);
  for (const char* source : {"tiny", "qwen3", "llama3"}) {
    const std::string tdir = std::string(LLMBENCH_TEST_DATA) + "/../../.cache/tokenizers/" + source;
    if (std::string(source) != "tiny" && !std::filesystem::exists(tdir + "/tokenizer.json")) continue;
    const auto tok = load_tokenizer(std::string(source) == "tiny" ? "tiny" : tdir);
    TraceSelection select;
    select.block_size = 8;
    const auto trace = load_trace(path, *tok, select);
    ASSERT_EQ(trace.size(), 200u) << source;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      ASSERT_EQ(tok->encode(trace[i].prompt.text, false).size(), 17u) << source << " " << i;
      if (i >= 5) {  // the request five before has the same first two hash ids
        EXPECT_GE(tok->encode(common_start(trace[i].prompt.text, trace[i - 5].prompt.text), false).size(), 15u) << source << " " << i;
      }
    }
  }
}

TEST(Dataset, TraceSelectionCutsByCountAndTimeAndOutputLenOverrides) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 10; ++i) text += cat("{\"timestamp\": ", 100 * i + 50, ", \"input_length\": 4, \"output_length\": ", i + 1, "}\n");
  const std::string path = dir.write("t.jsonl", text);
  const auto tok = load_tokenizer("tiny");
  // A line's "extra" is kept as compact JSON for its request; {} is none.
  const auto extra = load_trace(dir.write("extra.jsonl", "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 1, "
                                                         "\"extra\": {\"nvext\": {\"priority\": 9}}}\n"
                                                         "{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 1, \"extra\": {}}\n"),
                                *tok, {});
  EXPECT_EQ(extra[0].prompt.extra, "{\"nvext\":{\"priority\":9}}");
  EXPECT_EQ(extra[1].prompt.extra, "");
  TraceSelection select;
  select.max_requests = 3;
  EXPECT_EQ(load_trace(path, *tok, select).size(), 3u);
  select.max_requests = 0;
  select.before_ms = 350;  // arrivals 0, 100, 200, 300 (from the first, at 50)
  const auto cut = load_trace(path, *tok, select);
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_EQ(cut.back().arrival_ms, 300);
  select.before_ms = 0;
  select.output_len = 9;
  for (const auto& r : load_trace(path, *tok, select)) EXPECT_EQ(r.prompt.output_len, 9);
  // Stopped: what was made so far.
  int polls = 0;
  EXPECT_EQ(load_trace(path, *tok, select, [&] { return ++polls > 2; }).size(), 2u);
}

TEST(Dataset, TraceSessionsKeepTheirTurnsTogether) {
  // Session "a" starts at 100 and has three turns (the second after a delay, the third at its own time);
  // session 7 starts at 40 with messages; two lines alone at 0 and 300. Times from the earliest (0).
  TempDir dir;
  const std::string path = dir.write("s.jsonl",
      "{\"session_id\": \"a\", \"timestamp\": 100, \"input_length\": 4, \"output_length\": 2}\n"
      "{\"timestamp\": 300, \"input_length\": 3, \"output_length\": 1}\n"
      "{\"session_id\": 7, \"timestamp\": 40, \"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, "
      "{\"role\": \"user\", \"content\": \"hi there\"}], \"output_length\": 3}\n"
      "{\"session_id\": \"a\", \"delay\": 250, \"input_length\": 5, \"output_length\": 2}\n"
      "{\"timestamp\": 0, \"prompt\": \"alone\", \"output_length\": 1}\n"
      "{\"session_id\": \"a\", \"timestamp\": 900, \"prompt\": \"third\", \"output_length\": 2, \"delay\": null}\n"
      "{\"session_id\": 7, \"delay\": 10, \"messages\": [{\"role\": \"user\", \"content\": \"again\"}], \"output_length\": 4}\n");
  const auto tok = load_tokenizer("tiny");
  const auto trace = load_trace(path, *tok, {});
  ASSERT_EQ(trace.size(), 7u);
  // In order of their starts: alone (0), session 7 (40, two turns), session "a" (100, three turns), alone (300).
  std::vector<std::pair<int, int>> order;
  for (const auto& r : trace) order.emplace_back(r.session, r.turn);
  EXPECT_EQ(order, (std::vector<std::pair<int, int>>{{-1, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {1, 3}, {-1, 0}}));
  EXPECT_EQ(trace[0].prompt.text, "alone");
  EXPECT_EQ(trace[1].arrival_ms, 40);
  EXPECT_EQ(nlohmann::json::parse(trace[1].messages)[1]["content"], "hi there");
  EXPECT_EQ(trace[1].prompt.text, "");
  EXPECT_GT(trace[1].prompt.prompt_tokens, 0);
  EXPECT_FALSE(trace[2].timed);
  EXPECT_EQ(trace[2].delay_ms, 10);
  EXPECT_EQ(trace[3].arrival_ms, 100);
  EXPECT_EQ(tok->encode(trace[3].prompt.text, false).size(), 4u);
  EXPECT_FALSE(trace[4].timed);
  EXPECT_EQ(trace[4].delay_ms, 250);
  EXPECT_EQ(tok->encode(trace[4].prompt.text, false).size(), 5u);
  EXPECT_TRUE(trace[5].timed);
  EXPECT_EQ(trace[5].arrival_ms, 900);
  EXPECT_EQ(trace[5].prompt.text, "third");
  EXPECT_EQ(trace[6].arrival_ms, 300);
  // Selection takes whole sessions: 3 requests are the line alone and session 7; 4 are the same (session "a"
  // would make 6); 1 is the line alone; --duration 0.05 s keeps what starts before 50 ms.
  TraceSelection select;
  for (const auto& [n, want] : std::vector<std::pair<std::size_t, std::size_t>>{{3, 3}, {4, 3}, {1, 1}, {6, 6}}) {
    select.max_requests = n;
    EXPECT_EQ(load_trace(path, *tok, select).size(), want) << n;
  }
  select.max_requests = 0;
  select.before_ms = 50;
  EXPECT_EQ(load_trace(path, *tok, select).size(), 3u);
  // Without timestamps (an agent's sessions as recorded, for a load of its own): file order; a replay refuses them.
  const std::string untimed = dir.write("u.jsonl",
      "{\"session_id\": \"x\", \"prompt\": \"x1\", \"output_length\": 1}\n"
      "{\"prompt\": \"alone\", \"output_length\": 1}\n"
      "{\"session_id\": \"x\", \"delay\": 30, \"prompt\": \"x2\", \"output_length\": 1}\n");
  TraceSelection loose;
  loose.need_times = false;
  const auto u = load_trace(untimed, *tok, loose);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].prompt.text, "x1");
  EXPECT_EQ(u[1].prompt.text, "x2");
  EXPECT_EQ(u[1].delay_ms, 30);
  EXPECT_EQ(u[2].prompt.text, "alone");
  EXPECT_THROW(load_trace(untimed, *tok, {}), UsageError);
  // "message_mode": "delta" on every line of a session, or on none.
  const std::string delta = dir.write("d.jsonl",
      "{\"session_id\": 1, \"timestamp\": 0, \"message_mode\": \"delta\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"output_length\": 1}\n"
      "{\"session_id\": 1, \"message_mode\": \"delta\", \"messages\": [{\"role\": \"user\", \"content\": \"b\"}], \"output_length\": 1}\n");
  const auto d = load_trace(delta, *tok, {});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(d[0].delta);
  EXPECT_TRUE(d[1].delta);
  const std::string half = dir.write("h.jsonl",
      "{\"session_id\": 1, \"timestamp\": 0, \"message_mode\": \"delta\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"output_length\": 1}\n"
      "{\"session_id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"b\"}], \"output_length\": 1}\n");
  try {
    load_trace(half, *tok, {});
    ADD_FAILURE() << "a half-delta session accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("h.jsonl:2: session 1: its lines all have \"message_mode\": \"delta\" or none do"),
              std::string::npos) << e.what();
  }
  // A session mixing messages and prompts is refused, naming its line.
  const std::string mixed = dir.write("m.jsonl",
      "{\"session_id\": 1, \"timestamp\": 0, \"prompt\": \"x\", \"output_length\": 1}\n"
      "{\"session_id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"y\"}], \"output_length\": 1}\n");
  try {
    load_trace(mixed, *tok, {});
    ADD_FAILURE() << "a mixed session accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl:2: session 1: its lines all give \"messages\" or none do"), std::string::npos) << e.what();
  }
}

TEST(Dataset, TraceRefusesBadLinesNamingThem) {
  TempDir dir;
  const auto tok = load_tokenizer("tiny");
  auto error_of = [&](const std::string& line, int block_size = 512) {
    const std::string path = dir.write("bad.jsonl", "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}\n" + line + "\n");
    TraceSelection select;
    select.block_size = block_size;
    try {
      load_trace(path, *tok, select);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto expect = [&](const std::string& line, const std::string& says, int block_size = 512) {
    const std::string e = error_of(line, block_size);
    EXPECT_NE(e.find("bad.jsonl:2: "), std::string::npos) << line << " -> " << e;
    EXPECT_NE(e.find(says), std::string::npos) << line << " -> " << e;
  };
  expect("[1, 2]", "not a JSON object");
  expect("{\"input_length\": 3, \"output_length\": 1}", "\"timestamp\" must be a number");
  expect("{\"timestamp\": -1, \"input_length\": 3, \"output_length\": 1}", "\"timestamp\" must be a number");
  expect("{\"timestamp\": \"5\", \"input_length\": 3, \"output_length\": 1}", "\"timestamp\" must be a number");
  expect("{\"timestamp\": 1, \"output_length\": 1}", "exactly one of");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"prompt\": \"x\", \"output_length\": 1}", "exactly one of");
  expect("{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1}", "\"input_length\" must be an integer");
  expect("{\"timestamp\": 1, \"input_length\": 2.5, \"output_length\": 1}", "\"input_length\" must be an integer");
  expect("{\"timestamp\": 1, \"text_input\": \"\", \"output_length\": 1}", "\"text_input\" must be a non-empty string");
  expect("{\"timestamp\": 1, \"input_length\": 3}", "\"output_length\" must be an integer");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 0}", "\"output_length\" must be an integer");
  expect("{\"timestamp\": 1, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": [1, 2]}", "is 3 blocks of 512 tokens, but \"hash_ids\" has 2");
  expect("{\"timestamp\": 1, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": [1]}", "is 2 blocks of 8 tokens", 8);
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [-1]}", "integers >= 0");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": 4}", "integers >= 0");
  expect("{\"timestamp\": 1, \"prompt\": \"x\", \"output_length\": 1, \"hash_ids\": [1]}", "not a given text");
  expect("{\"timestamp\": 1, \"messages\": [], \"output_length\": 1}", "\"messages\" must be a non-empty array");
  expect("{\"timestamp\": 1, \"messages\": [{\"role\": \"user\"}], \"output_length\": 1}", "\"messages\" must be a non-empty array");
  expect("{\"timestamp\": 1, \"messages\": [{\"role\": \"user\", \"content\": 5}], \"output_length\": 1}", "string, array or null}");
  expect("{\"timestamp\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"prompt\": \"y\", \"output_length\": 1}",
         "exactly one of");
  expect("{\"timestamp\": 1, \"delay\": 5, \"input_length\": 3, \"output_length\": 1}", "\"delay\" is for a later line of a session");
  expect("{\"session_id\": [1], \"timestamp\": 1, \"input_length\": 3, \"output_length\": 1}", "\"session_id\" must be a string or an integer");
  expect("{\"session_id\": \"s\", \"input_length\": 3, \"output_length\": 1}", "session \"s\": its first line needs a \"timestamp\"");
  expect("{\"session_id\": 7, \"timestamp\": 1, \"delay\": -2, \"input_length\": 3, \"output_length\": 1}", "\"delay\" must be a number");
  expect("{\"session_id\": 7, \"timestamp\": 1, \"message_mode\": \"delta\", \"input_length\": 3, \"output_length\": 1}",
         "\"delta\" is for a line with \"messages\"");
  expect("{\"session_id\": 7, \"timestamp\": 1, \"message_mode\": \"deltas\", \"input_length\": 3, \"output_length\": 1}",
         "\"message_mode\" must be \"history\"");
  expect("{\"timestamp\": 1, \"prompt\": \"caf\xc3\", \"output_length\": 1}", "invalid UTF-8 at byte");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"extra\": [1]}", "\"extra\" must be a JSON object");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"extra\": {\"model\": \"x\"}}", "may not set \"model\"");
  expect("{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1, \"extra\": {\"stream\": false}}", "may not set \"stream\"");
  // A whole file: empty, missing, too many tokens.
  EXPECT_THROW(load_trace(dir.write("empty.jsonl", "\n\n"), *tok, {}), UsageError);
  EXPECT_THROW(load_trace(dir.path + "/missing.jsonl", *tok, {}), UsageError);
  std::string big;
  for (int i = 0; i < 4; ++i) big += cat("{\"timestamp\": ", i, ", \"input_length\": 16000000, \"output_length\": 1}\n");
  const std::string big_path = dir.write("big.jsonl", big);
  try {
    load_trace(big_path, *tok, {});
    ADD_FAILURE() << "64 M prompt tokens accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 50000000"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_dataset("trace:x.jsonl").kind, "trace");
  EXPECT_THROW(parse_dataset("trace:"), UsageError);
}
