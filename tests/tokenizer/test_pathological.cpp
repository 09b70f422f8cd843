// Pathological input found by review: time that grew faster than the input, crashes on deep JSON, and
// tokenizer_config.json values of the wrong type.
#include <chrono>
#include <functional>
#include <tuple>

#include "llmbench/base/error.h"
#include "llmbench/tokenizer/stream_decoder.h"
#include "test_tokenizer_common.h"

namespace llmbench {
namespace {

using nlohmann::json;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One token per code point of `chars` (no merges, no pre-tokenizer, Fuse decoder): decode(encode(x)) is
// the normalizer's output whenever every character of it is in `chars`.
std::unique_ptr<Tokenizer> normalizing(const std::string& type, const std::vector<std::string>& chars) {
  json vocab = {{"<unk>", 0}};
  for (const auto& c : chars) vocab[c] = int(vocab.size());
  json j = {{"added_tokens", json::array()},
            {"normalizer", {{"type", type}}},
            {"pre_tokenizer", nullptr},
            {"post_processor", nullptr},
            {"decoder", {{"type", "Fuse"}}},
            {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"vocab", vocab}, {"merges", json::array()}}}};
  return tokenizer_from_json(j.dump(), "", "test");
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

const std::string kAcute = "\xCC\x81", kGraveBelow = "\xCC\x96";  // U+0301 (ccc 230), U+0316 (ccc 220)

// utf8proc puts combining marks in canonical order with an exchange sort: 100 000 marks alternating
// between two classes took ~17 s (200 000: over a minute); now a stable sort, same order.
TEST(Pathological, LongRunOfCombiningMarksNormalizesInLinearTime) {
  auto nfc = normalizing("NFC", {"e", "\xC3\xA9", kAcute, kGraveBelow});
  const std::size_t n = 50000;
  const auto start = std::chrono::steady_clock::now();
  const std::string out = nfc->decode(nfc->encode("e" + repeat(kAcute + kGraveBelow, n), false));
  EXPECT_LT(seconds_since(start), 2.0);
  // Canonical order puts every U+0316 first; the first U+0301 then composes with e (é), the rest are blocked.
  EXPECT_EQ(out, "\xC3\xA9" + repeat(kGraveBelow, n) + repeat(kAcute, n - 1));
}

TEST(Pathological, NormalFormsStayExact) {
  // Decomposition before ordering: U+0F73 is two marks (ccc 129, 130), never recomposed.
  auto nfc = normalizing("NFC", {"\xE0\xBD\xB1", "\xE0\xBD\xB2", "\xEA\xB0\x80", "\xC3\xA9", kGraveBelow});
  EXPECT_EQ(nfc->decode(nfc->encode("\xE0\xBD\xB3\xE0\xBD\xB3", false)), "\xE0\xBD\xB1\xE0\xBD\xB1\xE0\xBD\xB2\xE0\xBD\xB2");
  EXPECT_EQ(nfc->decode(nfc->encode("\xE1\x84\x80\xE1\x85\xA1", false)), "\xEA\xB0\x80");  // Hangul jamo → 가
  EXPECT_EQ(nfc->decode(nfc->encode("e" + kAcute + kGraveBelow, false)), "\xC3\xA9" + kGraveBelow);
  auto nfd = normalizing("NFD", {"e", kAcute, kGraveBelow});
  EXPECT_EQ(nfd->decode(nfd->encode("\xC3\xA9" + kGraveBelow, false)), "e" + kGraveBelow + kAcute);
  auto nfkc = normalizing("NFKC", {"f", "i"});
  EXPECT_EQ(nfkc->decode(nfkc->encode("\xEF\xAC\x81", false)), "fi");  // U+FB01 ﬁ
}

TEST(Pathological, QwenNfcRoundTripsCombiningMarks) {
  LLMBENCH_REQUIRE_TOKENIZER("qwen3");
  const Tokenizer& t = testing::cached_tokenizer("qwen3");
  const std::size_t n = 100000;  // 200 000 marks on one base letter
  const auto start = std::chrono::steady_clock::now();
  const std::string out = t.decode(t.encode("e" + repeat(kAcute + kGraveBelow, n), false));
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(out, "\xC3\xA9" + repeat(kGraveBelow, n) + repeat(kAcute, n - 1));
}

std::string deep_array(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Error messages quoted the offending JSON with dump(), which recurses once per level: a value nested
// 200 000 deep overflowed the stack (SIGSEGV) instead of being refused.
TEST(Pathological, DeeplyNestedValuesAreRefusedNotACrash) {
  const std::string tiny(tiny_tokenizer_json());
  const json base = json::parse(tiny);
  const std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"normalizer", [](json& j) { j["normalizer"] = "@@"; }},
      {"decoder", [](json& j) { j["decoder"] = "@@"; }},
      {"added id", [](json& j) { j["added_tokens"][0]["id"] = "@@"; }},
      {"vocab id", [](json& j) { j["model"]["vocab"]["a"] = "@@"; }},
      {"split pattern", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = "@@"; }},
      {"template piece", [](json& j) { j["post_processor"]["single"][0] = "@@"; }},
      {"template specials", [](json& j) { j["post_processor"]["special_tokens"] = "@@"; }},
  };
  for (const auto& [what, edit] : cases) {
    json j = base;
    edit(j);
    std::string text = j.dump();
    text.replace(text.find("\"@@\""), 4, deep_array(200000));
    try {
      tokenizer_from_json(text, "", "deep.json");
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error& e) {
      EXPECT_LT(std::string(e.what()).size(), 400u) << what << ": " << e.what();
    }
  }
  json j = base;  // a dropout that is not a number is none: read without a (recursive) copy
  j["model"]["dropout"] = "@@";
  std::string text = j.dump();
  EXPECT_NO_THROW(tokenizer_from_json(text.replace(text.find("\"@@\""), 4, deep_array(200000)), "", "t"));
}

// Sequences built one level of recursion each: 100 000 nested Sequences overflowed the stack too.
TEST(Pathological, DeeplyNestedSequencesAreRefused) {
  const json base = json::parse(std::string(tiny_tokenizer_json()));
  for (const auto& [key, list, leaf] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"normalizer", "normalizers", R"({"type": "NFC"})"},
           {"pre_tokenizer", "pretokenizers", R"({"type": "ByteLevel"})"},
           {"decoder", "decoders", R"({"type": "ByteLevel"})"},
           {"post_processor", "processors", R"({"type": "ByteLevel"})"}}) {
    auto nested = [&](std::size_t depth) {
      json j = base;
      j[key] = "@@";
      std::string text = j.dump(), open = R"({"type": "Sequence", ")" + list + R"(": [)";
      std::string deep;
      for (std::size_t i = 0; i < depth; ++i) deep += open;
      deep += leaf;
      for (std::size_t i = 0; i < depth; ++i) deep += "]}";
      return text.replace(text.find("\"@@\""), 4, deep);
    };
    EXPECT_NO_THROW(tokenizer_from_json(nested(3), "", "t")) << key;
    try {
      tokenizer_from_json(nested(100000), "", "deep.json");
      ADD_FAILURE() << key << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("nested more than 64 deep"), std::string::npos) << key << ": " << e.what();
    }
  }
}

// A pattern that backtracks without bound hits PCRE2's limits: the error named neither the pattern nor
// the reason ("regex match failed with PCRE2 error -46").
TEST(Pathological, RunawayRegexIsNamed) {
  json j = json::parse(std::string(tiny_tokenizer_json()));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a|aa)+$";
  auto t = tokenizer_from_json(j.dump(), "", "dir/tokenizer.json");
  try {
    t->encode(std::string(5000, 'a') + "b", false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dir/tokenizer.json: regex /(a|aa)+$/ failed at byte 0 of the text: "), std::string::npos) << what;
    EXPECT_NE(what.find("limit"), std::string::npos) << what;
  }
}

// chat_template must be a string or HF's list of {"name", "template"}; other types were ignored (an
// int or object) or refused with nlohmann's words ("cannot use value() with string").
TEST(Pathological, ChatTemplateOfTheWrongTypeIsNamed) {
  const std::string tiny(tiny_tokenizer_json());
  for (const char* bad : {R"(5)", R"({"default": "x"})", R"(["<|im_start|>"])", R"([{"name": 5, "template": "x"}])",
                          R"([{"name": "default", "template": 5}])", R"([{"name": "default"}])"}) {
    try {
      tokenizer_from_json(tiny, std::string(R"({"chat_template": )") + bad + "}", "dir/tokenizer.json");
      ADD_FAILURE() << bad << ": accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("dir/tokenizer_config.json: chat_template"), std::string::npos) << bad << ": " << what;
      EXPECT_EQ(what.find("json.exception"), std::string::npos) << bad << ": " << what;
    }
  }
  // null and a list without "default" are no template: the format comes from the special tokens.
  for (const char* none : {R"(null)", R"([{"name": "tool_use", "template": "<|im_start|>"}])"})
    EXPECT_EQ(tokenizer_from_json(tiny, std::string(R"({"chat_template": )") + none + "}", "t")->chat_format(),
              ChatFormat::none)
        << none;
  EXPECT_EQ(tokenizer_from_json(tiny, R"({"chat_template": [{"name": "default", "template": "<|im_start|>"}]})", "t")
                ->chat_format(),
            ChatFormat::chatml);
}

// A bos_token that is no token of the vocabulary was written into llama3 / deepseek-r1 prompts as plain
// text (its bytes' ids), silently: refused like a missing bos_token.
TEST(Pathological, ChatBosThatIsNoTokenIsRefused) {
  const std::string tiny(tiny_tokenizer_json());
  auto t = tokenizer_from_json(tiny, R"({"bos_token": "<|nope|>"})", "dir/tokenizer.json");
  for (ChatFormat f : {ChatFormat::llama3, ChatFormat::deepseek_r1}) {
    try {
      t->encode_chat({{"user", "hi"}}, true, f);
      ADD_FAILURE() << to_string(f) << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("bos_token '<|nope|>' (tokenizer_config.json) is not one of its tokens"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(t->encode_chat({{"user", "hi"}}, true, ChatFormat::chatml));  // no BOS in it
  auto huge = tokenizer_from_json(tiny, json{{"bos_token", std::string(1000000, 'x')}}.dump(), "t");
  try {  // quoted in part, not a megabyte of error line
    huge->encode_chat({{"user", "hi"}}, true, ChatFormat::llama3);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
  auto ok = tokenizer_from_json(tiny, R"({"bos_token": "<|begin_of_text|>"})", "t");
  EXPECT_EQ(ok->encode_chat({{"user", "hi"}}, true, ChatFormat::llama3).front(), 1);
}

// serve streams with skip_special: ids that decode to nothing (EOS repeated under ignore_eos, ids past the
// tokenizer's vocabulary) stayed in the window, so each push decoded all of them again (quadratic:
// 100 000 took ~13 s).
TEST(Pathological, StreamOfInvisibleIdsStaysLinear) {
  auto t = load_tokenizer("tiny");
  StreamDecoder stream(*t, /*skip_special=*/true);
  std::string out;
  for (TokenId id : t->encode("Hi", false)) out += stream.push(id);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100000; ++i) out += stream.push(i % 2 ? 2 : 100000);  // EOS, an id outside the vocab
  for (TokenId id : t->encode(" there", false)) out += stream.push(id);
  out += stream.finish();
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(out, "Hi there");
}

// The same run after the first byte of an unfinished code point (its bytes wait in the window).
TEST(Pathological, InvisibleIdsInsideAnUnfinishedCodePointStayLinear) {
  auto t = load_tokenizer("tiny");
  std::vector<TokenId> emoji;  // the byte tokens of 😀
  for (unsigned char byte : std::string("\xF0\x9F\x98\x80"))
    for (TokenId id = 0; id < TokenId(t->vocab_size()); ++id)
      if (t->decode_bytes({id}) == std::string(1, char(byte))) emoji.push_back(id);
  ASSERT_EQ(emoji.size(), 4u);
  StreamDecoder stream(*t, /*skip_special=*/true);
  std::string out = stream.push(emoji[0]);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100000; ++i) out += stream.push(2);
  for (std::size_t k = 1; k < 4; ++k) out += stream.push(emoji[k]);
  out += stream.finish();
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(out, "\xF0\x9F\x98\x80");
}

// The Metaspace decoder strips the first token's leading space: a lone "▁" decodes to "" at the start of
// a stream but is not invisible (a run of them must keep its spaces).
TEST(Pathological, StreamKeepsLeadingSpaceTokens) {
  LLMBENCH_REQUIRE_TOKENIZER("llama2");
  const Tokenizer& t = testing::cached_tokenizer("llama2");
  const std::vector<TokenId> ids = t.encode("   Hello  world", false);
  StreamDecoder stream(t, true);
  std::string out;
  for (TokenId id : ids) out += stream.push(id);
  out += stream.finish();
  EXPECT_EQ(out, t.decode(ids, true));
}

}  // namespace
}  // namespace llmbench
