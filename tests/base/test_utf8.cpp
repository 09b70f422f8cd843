#include <gtest/gtest.h>

#include "llmbench/base/utf8.h"

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

TEST(Utf8, SequenceLengthTellsMalformedFromCutOff) {
  EXPECT_EQ(utf8::sequence_length("a", 0), 1);
  EXPECT_EQ(utf8::sequence_length("x\xE4\xB8\xAD", 1), 3);
  EXPECT_EQ(utf8::sequence_length("\xF0\x9F\x98\x80", 0), 4);
  EXPECT_EQ(utf8::sequence_length("\xE4\xB8", 0), -1);       // could still become valid
  EXPECT_EQ(utf8::sequence_length("\xE4\x41", 0), 0);        // a lead byte without its continuation
  EXPECT_EQ(utf8::sequence_length("\xC0\xAF", 0), 0);        // overlong
  EXPECT_EQ(utf8::sequence_length("\xED\xA0\x80", 0), 0);    // surrogate
  EXPECT_EQ(utf8::sequence_length("\x80", 0), 0);            // a stray continuation byte
}
