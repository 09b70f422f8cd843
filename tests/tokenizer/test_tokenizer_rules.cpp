// Pipeline rules on small hand-written tokenizer.json files, whose ids can be worked out by hand.
#include "llmbench/base/error.h"
#include "llmbench/tokenizer/stream_decoder.h"
#include "llmbench/base/utf8.h"
#include "test_tokenizer_common.h"

namespace llmbench {
namespace {

using nlohmann::json;

// Vocab: a=0 b=1 " "=2 ab=3 <unk>=4, merge "a b"; no pre-tokenizer, so each stretch is one word.
json small_tokenizer(json added = json::array(), json merges = json::array({"a b"})) {
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Fuse"}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"fuse_unk", true},
            {"vocab", {{"a", 0}, {"b", 1}, {" ", 2}, {"ab", 3}, {"<unk>", 4}}},
            {"merges", merges}}}};
}

json added(const std::string& content, int id, bool lstrip, bool rstrip, bool single_word) {
  return {{"id", id},         {"content", content},         {"special", true}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"single_word", single_word}, {"normalized", false}};
}

std::unique_ptr<Tokenizer> make(const json& j) { return tokenizer_from_json(j.dump(), "", "test"); }

TEST(TokenizerRules, MergesInBothForms) {
  auto a = make(small_tokenizer(json::array(), json::array({"a b"})));
  auto b = make(small_tokenizer(json::array(), json::array({json::array({"a", "b"})})));
  EXPECT_EQ(a->encode("abab a", false), (std::vector<TokenId>{3, 3, 2, 0}));
  EXPECT_EQ(b->encode("abab a", false), (std::vector<TokenId>{3, 3, 2, 0}));
}

TEST(TokenizerRules, UnknownCharactersFuseIntoOneUnk) {
  auto t = make(small_tokenizer());
  EXPECT_EQ(t->encode("axyzb", false), (std::vector<TokenId>{0, 4, 1}));
}

TEST(TokenizerRules, AddedTokenStripFlags) {
  // Plain: the spaces around <m> stay text.
  EXPECT_EQ(make(small_tokenizer(json::array({added("<m>", 9, false, false, false)})))->encode("a <m> b", false),
            (std::vector<TokenId>{0, 2, 9, 2, 1}));
  // lstrip swallows the whitespace before, rstrip the whitespace after.
  EXPECT_EQ(make(small_tokenizer(json::array({added("<m>", 9, true, false, false)})))->encode("a  <m> b", false),
            (std::vector<TokenId>{0, 9, 2, 1}));
  EXPECT_EQ(make(small_tokenizer(json::array({added("<m>", 9, false, true, false)})))->encode("a <m>  b", false),
            (std::vector<TokenId>{0, 2, 9, 1}));
}

TEST(TokenizerRules, AddedTokenSingleWord) {
  auto t = make(small_tokenizer(json::array({added("<m>", 9, false, false, true)})));
  EXPECT_EQ(t->encode("a <m> b", false), (std::vector<TokenId>{0, 2, 9, 2, 1}));
  EXPECT_EQ(t->encode("a<m>b", false), (std::vector<TokenId>{0, 4, 1}));  // inside a word: plain text
}

TEST(TokenizerRules, AddedTokensLongestMatchFirst) {
  auto t = make(small_tokenizer(json::array({added("<m", 8, false, false, false), added("<m>", 9, false, false, false)})));
  EXPECT_EQ(t->encode("<m><m", false), (std::vector<TokenId>{9, 8}));
}

TEST(TokenizerRules, SkipSpecialOnDecode) {
  auto t = make(small_tokenizer(json::array({added("<m>", 9, false, false, false)})));
  EXPECT_EQ(t->decode({0, 9, 1}, false), "a<m>b");
  EXPECT_EQ(t->decode({0, 9, 1}, true), "ab");
}

TEST(TokenizerRules, TemplateProcessingAddsBosOnlyWithSpecials) {
  json j = small_tokenizer(json::array({added("<s>", 5, false, false, false)}));
  j["post_processor"] = json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]}}})");
  auto t = make(j);
  EXPECT_EQ(t->encode("ab", true), (std::vector<TokenId>{5, 3}));
  EXPECT_EQ(t->encode("ab", false), (std::vector<TokenId>{3}));
  EXPECT_EQ(t->encode("", true), (std::vector<TokenId>{5}));
}

TEST(TokenizerRules, NfcNormalizerComposes) {
  json j = small_tokenizer();
  j["normalizer"] = {{"type", "NFC"}};
  j["model"]["vocab"]["\xC3\xA9"] = 6;  // é, precomposed
  auto t = make(j);
  EXPECT_EQ(t->encode("e\xCC\x81", false), (std::vector<TokenId>{6}));  // e + U+0301
}

TEST(TokenizerRules, UnsupportedComponentIsNamed) {
  json j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  try {
    make(j);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Whitespace"), std::string::npos) << e.what();
  }
  j = small_tokenizer();
  j["model"]["type"] = "WordPiece";
  EXPECT_THROW(make(j), Error);
  j = small_tokenizer();
  j["decoder"] = {{"type", "CTC"}};
  EXPECT_THROW(make(j), Error);
}

// Found by fuzzing: an id that is a float beyond int range was converted with undefined behaviour.
TEST(TokenizerRules, TokenIdsMustBeIntegersInRange) {
  for (const json& bad : {json(4.88889e58), json(-1), json(2.5), json("3"), json(1ULL << 40)}) {
    json j = small_tokenizer();
    j["model"]["vocab"]["ab"] = bad;
    try {
      make(j);
      ADD_FAILURE() << "accepted vocab id " << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected a token id"), std::string::npos) << e.what();
    }
    j = small_tokenizer(json::array({added("<x>", 0, false, false, false)}));
    j["added_tokens"][0]["id"] = bad;
    EXPECT_THROW(make(j), Error) << bad.dump();
  }
}

TEST(TokenizerRules, MergeWithUnknownTokenIsAnError) {
  EXPECT_THROW(make(small_tokenizer(json::array(), json::array({"a c"}))), Error);
}

TEST(TokenizerBadInput, InvalidUtf8NamesTheOffset) {
  auto t = load_tokenizer("tiny");
  for (std::string bad : {std::string("ab\xFF" "cd"), std::string("ab\xC3"), std::string("ab\xED\xA0\x80")}) {
    try {
      t->encode(bad);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("byte offset 2"), std::string::npos) << e.what();
    }
  }
}

TEST(TokenizerBadInput, TruncatedOrMalformedJson) {
  std::string full(tiny_tokenizer_json());
  EXPECT_THROW(tokenizer_from_json(full.substr(0, full.size() / 2), "", "half"), Error);
  EXPECT_THROW(tokenizer_from_json("", "", "empty"), Error);
  EXPECT_THROW(tokenizer_from_json("[1, 2]", "", "list"), Error);
  EXPECT_THROW(tokenizer_from_json(R"({"model": {"type": "BPE"}})", "", "no vocab"), Error);
  EXPECT_THROW(tokenizer_from_json(full, "{not json", "bad config"), Error);
}

TEST(TokenizerBadInput, MissingFiles) {
  EXPECT_THROW(load_tokenizer("/nonexistent/llmbench/tokenizer"), Error);
  auto empty = std::filesystem::temp_directory_path() / "llmbench_empty_tokenizer_dir";
  std::filesystem::create_directories(empty);
  EXPECT_THROW(load_tokenizer(empty.string()), Error);
  auto bad_model = empty / "tokenizer.model";
  { std::ofstream(bad_model) << "not a sentencepiece model"; }
  EXPECT_THROW(load_tokenizer(bad_model.string()), Error);
  std::filesystem::remove_all(empty);
}

TEST(TinyTokenizer, ShapeAndSpecialIds) {
  auto t = load_tokenizer("tiny");
  EXPECT_EQ(t->vocab_size(), 512u);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  // A byte no merge uses keeps its byte token: id 3 + byte value.
  EXPECT_EQ(t->encode("\x01", false), (std::vector<TokenId>{3 + 1}));
  EXPECT_EQ(t->encode("\x01", true), (std::vector<TokenId>{1, 3 + 1}));
  EXPECT_EQ(t->encode("<|end_of_text|>", false), (std::vector<TokenId>{2}));
  std::string text = "The tokenizer turns the prompt into token ids. 中文 😀 e\xCC\x81";
  auto ids = t->encode(text, false);
  EXPECT_LT(ids.size(), text.size());  // the merges compress English
  EXPECT_EQ(t->decode(ids), text);
}

TEST(StreamDecoder, HoldsBackPartialUtf8) {
  auto t = load_tokenizer("tiny");
  // 😀 is F0 9F 98 80, four byte tokens with no merge between them in the tiny vocab.
  std::vector<TokenId> ids = t->encode("\xF0\x9F\x98\x80!", false);
  StreamDecoder stream(*t);
  std::string out;
  std::size_t empty_pushes = 0;
  for (TokenId id : ids) {
    std::string piece = stream.push(id);
    EXPECT_TRUE(utf8::is_valid(piece));
    empty_pushes += piece.empty();
    out += piece;
  }
  out += stream.finish();
  EXPECT_EQ(out, "\xF0\x9F\x98\x80!");
  EXPECT_GT(empty_pushes, 0u);
}

TEST(StreamDecoder, UnfinishedSequenceAtTheEndBecomesReplacement) {
  auto t = load_tokenizer("tiny");
  std::vector<TokenId> ids = t->encode("\xF0\x9F\x98\x80", false);
  ids.pop_back();
  StreamDecoder stream(*t);
  std::string out;
  for (TokenId id : ids) out += stream.push(id);
  EXPECT_EQ(out, "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(t->decode(ids), "\xEF\xBF\xBD");
}

// Malformed bytes before an unfinished sequence go out at once as U+FFFD; only the unfinished tail
// waits (a run of lead bytes must not hold the stream back until the end).
TEST(StreamDecoder, MalformedBytesGoAtOnceOnlyTheUnfinishedTailWaits) {
  auto t = load_tokenizer("tiny");
  auto byte_token = [&](unsigned char byte) {  // the byte-level token of one byte
    for (TokenId id = 0; id < TokenId(t->vocab_size()); ++id)
      if (t->decode_bytes({id}) == std::string(1, char(byte))) return id;
    ADD_FAILURE() << "no token for byte " << int(byte);
    return TokenId(0);
  };
  const std::vector<TokenId> emoji = {byte_token(0xF0), byte_token(0x9F), byte_token(0x98), byte_token(0x80)};
  const TokenId lead = emoji[0];
  std::vector<TokenId> ids = {lead, lead, lead, emoji[0], emoji[1], emoji[2], emoji[3]};
  ASSERT_EQ(t->encode("!", false).size(), 1u);
  ids.push_back(t->encode("!", false)[0]);
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::string> want = {"", fffd, fffd, fffd, "", "", "\xF0\x9F\x98\x80", "!"};
  StreamDecoder stream(*t);
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = stream.push(ids[i]);
    EXPECT_EQ(piece, want[i]) << "push " << i;
    out += piece;
  }
  out += stream.finish();
  EXPECT_EQ(out, t->decode(ids));

  StreamDecoder tail(*t);  // lead bytes to the end: all but the last at once, the last one at finish()
  std::string pieces;
  for (int i = 0; i < 3; ++i) pieces += tail.push(lead);
  EXPECT_EQ(pieces, fffd + fffd);
  EXPECT_EQ(tail.finish(), fffd);
}

TEST(Chat, FormatsAndDetection) {
  std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", " Hi "}};
  EXPECT_EQ(format_chat(ChatFormat::llama3, m, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(format_chat(ChatFormat::chatml, m, true, ""),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(format_chat(ChatFormat::deepseek_r1, m, true, "<｜begin▁of▁sentence｜>"),
            "<｜begin▁of▁sentence｜>Be brief.<｜User｜> Hi <｜Assistant｜><think>\n");
  EXPECT_EQ(detect_chat_format("{{ '<|im_start|>' }}", {}), ChatFormat::chatml);
  EXPECT_EQ(detect_chat_format("", {"<|start_header_id|>"}), ChatFormat::llama3);
  EXPECT_EQ(detect_chat_format("{{'<｜User｜>' + content}}", {}), ChatFormat::deepseek_r1);
  EXPECT_EQ(parse_chat_format("qwen"), ChatFormat::chatml);
  EXPECT_THROW(parse_chat_format("vicuna"), UsageError);
}

}  // namespace
}  // namespace llmbench
