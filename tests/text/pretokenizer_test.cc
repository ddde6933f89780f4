// SPDX-License-Identifier: Apache-2.0
// The pre-tokenizer against what GPT-2's regex gives in JavaScript (the
// expected pieces were printed by node's String.prototype.matchAll with the
// reference's /u regex), and the code-point classes it rests on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/pretokenizer.h"
#include "text/unicode_tables.h"

namespace {

using zerodp::text::pretokenize;

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string> out;
  for (auto p : pretokenize(text)) out.emplace_back(p);
  return out;
}

using V = std::vector<std::string>;

TEST(PreTokenizer, WordsTakeTheSpaceBeforeThem) {
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces(""), V{});
  EXPECT_EQ(pieces("a"), V{"a"});
}

TEST(PreTokenizer, Contractions) {
  EXPECT_EQ(pieces("I'm here, they're not; we've you'll he'd it's can't"),
            (V{"I", "'m", " here", ",", " they", "'re", " not", ";", " we", "'ve", " you", "'ll", " he", "'d", " it",
               "'s", " can", "'t"}));
  // Only lower case, only right after the apostrophe; a quote before a word
  // is punctuation.
  EXPECT_EQ(pieces(" 'hello' 'S"), (V{" '", "hello", "'", " '", "S"}));
  EXPECT_EQ(pieces("''s"), (V{"''", "s"}));
  EXPECT_EQ(pieces("'ll'"), (V{"'ll", "'"}));
  EXPECT_EQ(pieces("'r"), (V{"'", "r"}));
  EXPECT_EQ(pieces("'"), V{"'"});
}

TEST(PreTokenizer, RunsOfSpacesLeaveTheLastOneToTheNextWord) {
  EXPECT_EQ(pieces("a  b   c"), (V{"a", " ", " b", "  ", " c"}));
  EXPECT_EQ(pieces("trailing  "), (V{"trailing", "  "}));
  EXPECT_EQ(pieces("trailing "), (V{"trailing", " "}));
  EXPECT_EQ(pieces("  "), V{"  "});
  EXPECT_EQ(pieces("  a"), (V{" ", " a"}));
  EXPECT_EQ(pieces("tab\there \t\tx"), (V{"tab", "\t", "here", " \t", "\t", "x"}));
}

TEST(PreTokenizer, NewlinesAndEmptyLines) {
  EXPECT_EQ(pieces("x\n\ny\n"), (V{"x", "\n", "\n", "y", "\n"}));
  EXPECT_EQ(pieces("\n\n\nHello"), (V{"\n\n", "\n", "Hello"}));
  EXPECT_EQ(pieces("a\r\nb"), (V{"a", "\r", "\n", "b"}));
  EXPECT_EQ(pieces("end\n\n"), (V{"end", "\n\n"}));
}

TEST(PreTokenizer, DigitsAndPunctuation) {
  EXPECT_EQ(pieces("12345 678x9"), (V{"12345", " 678", "x", "9"}));
  EXPECT_EQ(pieces("?!... \"quoted\""), (V{"?!...", " \"", "quoted", "\""}));
  EXPECT_EQ(pieces("3.14, -2"), (V{"3", ".", "14", ",", " -", "2"}));
}

TEST(PreTokenizer, Unicode) {
  EXPECT_EQ(pieces("naïve café"), (V{"naïve", " café"}));
  EXPECT_EQ(pieces("日本語のテキスト"), V{"日本語のテキスト"});
  EXPECT_EQ(pieces("emoji 👍🏽 ok"), (V{"emoji", " 👍🏽", " ok"}));
  // A combining mark is not a letter (\p{L} excludes \p{M}).
  EXPECT_EQ(pieces("e\xCC\x81 combining"), (V{"e", "\xCC\x81", " combining"}));
  // No-break space and the ideographic space are \s, but only ' ' joins a word.
  EXPECT_EQ(pieces("x\u00a0y \u3000z"), (V{"x", "\u00a0", "y", " ", "\u3000", "z"}));
  EXPECT_EQ(pieces("\u2028line"), (V{"\u2028", "line"}));
  // \p{N} is more than digits.
  EXPECT_EQ(pieces("٣ numbers ½ Ⅻ"), (V{"٣", " numbers", " ½", " Ⅻ"}));
}

TEST(PreTokenizer, IllFormedBytesArePunctuationAndKeepTheirBytes) {
  EXPECT_EQ(pieces("ab\xFF\xFE cd"), (V{"ab", "\xFF\xFE", " cd"}));
  EXPECT_EQ(pieces(" \xE2\x82"), V{" \xE2\x82"});
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string joined;
  for (const auto& p : pieces(all + all)) joined += p;
  EXPECT_EQ(joined, all + all);
}

TEST(UnicodeClasses, AgreeWithJavaScript) {
  using namespace zerodp::text;
  EXPECT_TRUE(is_letter(U'a'));
  EXPECT_TRUE(is_letter(U'Z'));
  EXPECT_FALSE(is_letter(U'_'));
  EXPECT_FALSE(is_letter(U'@'));
  EXPECT_FALSE(is_letter(U'['));
  EXPECT_TRUE(is_letter(U'é'));
  EXPECT_TRUE(is_letter(U'日'));
  EXPECT_TRUE(is_letter(0x20000));   // CJK extension B
  EXPECT_FALSE(is_letter(0x0301));   // combining acute
  EXPECT_FALSE(is_letter(0x1F44D));  // emoji
  EXPECT_TRUE(is_number(U'7'));
  EXPECT_TRUE(is_number(0x00BD));  // ½
  EXPECT_TRUE(is_number(0x0663));  // Arabic-Indic three
  EXPECT_FALSE(is_number(U'x'));
  EXPECT_TRUE(is_space(U'\n'));
  EXPECT_TRUE(is_space(0x0B));
  EXPECT_TRUE(is_space(0xFEFF));
  EXPECT_FALSE(is_space(0x200B));  // zero-width space is not \s in JavaScript
  EXPECT_FALSE(is_space(0x85));    // nor is NEL
  EXPECT_FALSE(is_letter(0x10FFFF));
  // The tables are sorted and disjoint.
  const std::vector<std::pair<const CodePointRange*, size_t>> tables = {
      {kLetterRanges, kLetterRangeCount}, {kNumberRanges, kNumberRangeCount}, {kSpaceRanges, kSpaceRangeCount}};
  for (const auto& [ranges, count] : tables) {
    for (size_t i = 0; i < count; ++i) {
      EXPECT_LE(ranges[i].first, ranges[i].last);
      if (i > 0) {
        EXPECT_LT(ranges[i - 1].last + 1, ranges[i].first);
      }
    }
  }
}

}  // namespace
