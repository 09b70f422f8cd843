#include <gtest/gtest.h>

#include "llmbench/tokenizer/utf8.h"

using namespace llmbench;

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(utf8::is_valid(""));
  EXPECT_TRUE(utf8::is_valid("plain ascii"));
  EXPECT_TRUE(utf8::is_valid("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"));  // é 中 😀
}

TEST(Utf8, RejectsMalformedSequences) {
  EXPECT_EQ(utf8::first_invalid("ab\xFF"), 2u);
  EXPECT_EQ(utf8::first_invalid("\xC0\xAF"), 0u);           // overlong '/'
  EXPECT_EQ(utf8::first_invalid("x\xED\xA0\x80"), 1u);      // surrogate U+D800
  EXPECT_EQ(utf8::first_invalid("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(utf8::first_invalid("\xE4\xB8"), 0u);           // truncated at the end
}

TEST(Utf8, CompletePrefixHoldsBackAnUnfinishedTail) {
  EXPECT_EQ(utf8::complete_prefix("ab\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::complete_prefix("ab\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(utf8::complete_prefix("\xF0\x9F"), 0u);
}

TEST(Utf8, ShortenedCutsAtACodePoint) {
  EXPECT_EQ(utf8::shortened("abc", 3), "abc");
  EXPECT_EQ(utf8::shortened("abcd", 3), "abc...");
  EXPECT_EQ(utf8::shortened("ab\xC3\xA9z", 3), "ab...");        // é would be cut in half
  EXPECT_EQ(utf8::shortened("\xE4\xB8\xAD\xE6\x96\x87", 4), "\xE4\xB8\xAD...");
}
