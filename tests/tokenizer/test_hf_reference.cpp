// Exact ids against HF tokenizers 0.23 (fixtures made by scripts/reference/make_tokenizer_fixtures.py).
#include "llmbench/tokenizer/bench_text.h"
#include "llmbench/tokenizer/stream_decoder.h"
#include "llmbench/base/utf8.h"
#include "test_tokenizer_common.h"

namespace llmbench {
namespace {

using testing::cached_tokenizer;
using testing::reference_path;

class HfReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LLMBENCH_REQUIRE_TOKENIZER(GetParam());
    if (!std::filesystem::exists(reference_path(GetParam())))
      GTEST_SKIP() << "no HF fixture " << reference_path(GetParam())
                   << " yet: regenerate with scripts/reference/make_tokenizer_fixtures.py";
    ref_ = nlohmann::json::parse(testing::slurp(reference_path(GetParam())));
    tok_ = &cached_tokenizer(GetParam());
  }
  nlohmann::json ref_;
  const Tokenizer* tok_ = nullptr;
};

std::string show(const std::string& s) { return nlohmann::json(s).dump(); }

TEST_P(HfReference, IdsWithSpecialTokens) {
  for (const auto& c : ref_["cases"]) {
    auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok_->encode(text, true), c["ids"].get<std::vector<TokenId>>()) << show(text);
  }
}

TEST_P(HfReference, IdsWithoutSpecialTokens) {
  for (const auto& c : ref_["cases"]) {
    auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok_->encode(text, false), c["ids_no_special"].get<std::vector<TokenId>>()) << show(text);
  }
}

TEST_P(HfReference, DecodeMatchesHf) {
  for (const auto& c : ref_["cases"]) {
    auto ids = c["ids"].get<std::vector<TokenId>>();
    auto plain = c["ids_no_special"].get<std::vector<TokenId>>();
    auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok_->decode(plain, false), c["decoded"].get<std::string>()) << show(text);
    EXPECT_EQ(tok_->decode(ids, false), c["decoded_special"].get<std::string>()) << show(text);
    EXPECT_EQ(tok_->decode(ids, true), c["decoded_skip_special"].get<std::string>()) << show(text);
  }
}

// decode(encode(x)) == x for every string HF itself round-trips (and at least most of the corpus).
TEST_P(HfReference, RoundTripWhereHfRoundTrips) {
  int round_trips = 0;
  for (const auto& c : ref_["cases"]) {
    auto text = c["text"].get<std::string>();
    if (c["decoded"].get<std::string>() != text) continue;
    ++round_trips;
    EXPECT_EQ(tok_->decode(tok_->encode(text, false)), text) << show(text);
  }
  EXPECT_GT(round_trips, int(ref_["cases"].size()) / 2);
}

TEST_P(HfReference, StreamingEqualsWholeDecodeAndIsAlwaysValidUtf8) {
  for (const auto& c : ref_["cases"]) {
    auto ids = c["ids"].get<std::vector<TokenId>>();
    StreamDecoder stream(*tok_);
    std::string all;
    for (TokenId id : ids) {
      std::string piece = stream.push(id);
      EXPECT_TRUE(utf8::is_valid(piece)) << show(c["text"].get<std::string>());
      all += piece;
    }
    all += stream.finish();
    EXPECT_EQ(all, tok_->decode(ids)) << show(c["text"].get<std::string>());
  }
}

TEST_P(HfReference, VocabSize) { EXPECT_EQ(tok_->vocab_size(), ref_["vocab_size"].get<std::size_t>()); }

TEST_P(HfReference, ChatPromptMatchesTransformers) {
  const auto& tf = ref_["transformers"];
  if (!tf.contains("chat_prompt")) GTEST_SKIP() << GetParam() << " has no chat template in its fixture";
  std::vector<ChatMessage> messages;
  for (const auto& m : tf["chat_messages"]) messages.push_back({m["role"], m["content"]});
  EXPECT_EQ(tok_->apply_chat(messages, true), tf["chat_prompt"].get<std::string>());
}

// The 1 MB benchmark text (the same bytes the fixture script made) gives HF's token count: long
// inputs, caches and the fast paths agree with HF beyond the corpus.
TEST_P(HfReference, BenchTextTokenCount) {
  auto perf = nlohmann::json::parse(testing::slurp(std::string(LLMBENCH_TEST_DATA) + "/tokenizer/reference/hf_throughput.json"));
  if (!perf["results"].contains(GetParam())) GTEST_SKIP() << "no HF figure for " << GetParam();
  auto corpus = nlohmann::json::parse(testing::slurp(std::string(LLMBENCH_TEST_DATA) + "/tokenizer/corpus.json"));
  std::string text = bench_text(corpus.get<std::vector<std::string>>());
  ASSERT_EQ(text.size(), perf["bench_text_bytes"].get<std::size_t>());
  EXPECT_EQ(tok_->encode(text, false).size(), perf["results"][GetParam()]["tokens"].get<std::size_t>());
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfReference, ::testing::Values("llama3", "qwen3", "llama2", "tiny"));

}  // namespace
}  // namespace llmbench
