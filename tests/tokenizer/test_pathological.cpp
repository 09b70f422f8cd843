// Pathological input found by review: time that grew faster than the input.
#include <chrono>

#include "llmbench/base/error.h"
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

}  // namespace
}  // namespace llmbench
