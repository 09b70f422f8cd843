#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/tokenizer/tokenizer.h"

using namespace llmbench;

namespace {
const std::string kData = LLMBENCH_TEST_DATA;
}

// Ids of a real sentencepiece .model (through libsentencepiece, loaded with RTLD_DEEPBIND) against the
// Python sentencepiece package's ids for the whole corpus.
TEST(Sentencepiece, IdsMatchThePythonPackage) {
  auto ref = nlohmann::json::parse(read_file(kData + "/tokenizer/reference/tiny_spm.json"));
  auto tok = load_tokenizer(kData + "/tokenizer/spm/tiny_spm.model");
  EXPECT_EQ(tok->info().kind, "sentencepiece");
  EXPECT_EQ(tok->vocab_size(), ref["vocab_size"].get<std::size_t>());
  int n = 0;
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    auto ids = tok->encode(text, /*add_special=*/false);
    std::vector<TokenId> want = c["ids"].get<std::vector<TokenId>>();
    EXPECT_EQ(ids, want) << "text: " << text;
    EXPECT_EQ(tok->decode(ids), c["decoded"].get<std::string>()) << "text: " << text;
    ++n;
  }
  EXPECT_GT(n, 40);
  // With special tokens, sentencepiece's default is BOS first.
  auto with_bos = tok->encode("hello", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos.front(), ref["bos_id"].get<TokenId>());
}

// A chat format that starts with BOS gives BOS's id, not the ids of the text "<s>" (HF's apply_chat_template
// splits special tokens out of the rendered text); the rest is the remainder's own encoding.
TEST(Sentencepiece, ChatFormatsEncodeTheirBosAsItsId) {
  auto tok = load_tokenizer(kData + "/tokenizer/spm/tiny_spm.model");
  ASSERT_TRUE(tok->bos_id().has_value());
  EXPECT_EQ(*tok->bos_id(), 1);
  for (ChatFormat f : {ChatFormat::llama3, ChatFormat::deepseek_r1}) {
    const std::string text = tok->apply_chat({{"user", "hi"}}, true, f);
    ASSERT_EQ(text.rfind(tok->info().bos_token, 0), 0u) << text;
    const std::vector<TokenId> ids = tok->encode_chat({{"user", "hi"}}, true, f);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1) << to_string(f);
    EXPECT_EQ(std::vector<TokenId>(ids.begin() + 1, ids.end()),
              tok->encode(text.substr(tok->info().bos_token.size()), false))
        << to_string(f);
  }
}

TEST(Sentencepiece, CorruptModelIsAClearError) {
  const std::string path = ::testing::TempDir() + "/bad.model";
  write_file_atomic(path, "this is not a protobuf");
  EXPECT_THROW(load_tokenizer(path), Error);
}
