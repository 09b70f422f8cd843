#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

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
