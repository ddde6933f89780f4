// SPDX-License-Identifier: Apache-2.0
// Strict UTF-8 decoding and the repair of bytes for printing.
#include <gtest/gtest.h>

#include "text/utf8.h"

namespace {

using zerodp::text::next_code_point;
using zerodp::text::to_valid_utf8;
using zerodp::text::utf8_encode;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, DecodesEveryLength) {
  EXPECT_EQ(next_code_point("A", 0).code, U'A');
  EXPECT_EQ(next_code_point("é", 0).code, 0xE9u);
  EXPECT_EQ(next_code_point("日", 0).length, 3u);
  const auto emoji = next_code_point("👍", 0);
  EXPECT_TRUE(emoji.valid);
  EXPECT_EQ(emoji.code, 0x1F44Du);
  EXPECT_EQ(emoji.length, 4u);
  for (char32_t c : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    const std::string s = utf8_encode(c);
    const auto d = next_code_point(s, 0);
    EXPECT_TRUE(d.valid);
    EXPECT_EQ(d.code, c);
    EXPECT_EQ(d.length, s.size());
  }
}

TEST(Utf8, RefusesIllFormedSequences) {
  EXPECT_FALSE(next_code_point("\xC0\x80", 0).valid);          // overlong
  EXPECT_FALSE(next_code_point("\xE0\x80\x80", 0).valid);      // overlong
  EXPECT_FALSE(next_code_point("\xED\xA0\x80", 0).valid);      // surrogate
  EXPECT_FALSE(next_code_point("\xF4\x90\x80\x80", 0).valid);  // above U+10FFFF
  EXPECT_FALSE(next_code_point("\x80", 0).valid);              // stray continuation
  // The maximal subpart: a lead byte with the continuations that fit it.
  EXPECT_EQ(next_code_point("\xE2\x82"
                            "a",
                            0)
                .length,
            2u);
  EXPECT_EQ(next_code_point("\xF0\x9F\x91", 0).length, 3u);
  EXPECT_EQ(next_code_point("\xE0\x80", 0).length, 1u);
}

TEST(Utf8, RepairReplacesEachIllFormedPartOnce) {
  EXPECT_EQ(to_valid_utf8("plain ascii"), "plain ascii");
  EXPECT_EQ(to_valid_utf8("日本 👍"), "日本 👍");
  EXPECT_EQ(to_valid_utf8("ab\xE2\x82"), "ab" + kFffd);  // cut in the middle of '€'
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x91"
                          "x"),
            kFffd + "x");
  EXPECT_EQ(to_valid_utf8("\xFF\xFE"), kFffd + kFffd);
  EXPECT_EQ(to_valid_utf8("\xC0\x80"), kFffd + kFffd);
  EXPECT_EQ(to_valid_utf8(""), "");
}

}  // namespace
