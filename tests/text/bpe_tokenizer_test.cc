// SPDX-License-Identifier: Apache-2.0
// GPT-2's BPE: ids the reference JavaScript encoder (npm gpt-3-encoder's
// encode) gives for these strings, and decode(encode(x)) == x. The whole
// texts are compared with the reference by tokenize_matches_reference.sh.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "text/bpe_tokenizer.h"
#include "text_test_util.h"

namespace {

using zerodp::text::BpeTokenizer;
using zerodp::text_testing::gpt2;
using Ids = std::vector<int32_t>;

TEST(Gpt2Bpe, TheVocabulary) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  EXPECT_EQ(t->vocab_size(), zerodp::text::kGpt2VocabSize);
  EXPECT_EQ(t->end_of_text(), zerodp::text::kGpt2EndOfText);
  EXPECT_EQ(t->decode(Ids{zerodp::text::kGpt2EndOfText}), "<|endoftext|>");
}

TEST(Gpt2Bpe, EncodesAsTheReference) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  EXPECT_EQ(t->encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(t->encode(" Hello"), (Ids{18435}));
  // Text is text: the end-of-text marker written out is 7 ordinary tokens.
  EXPECT_EQ(t->encode("<|endoftext|>"), (Ids{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(t->encode("I'm here, they're not; can't"), (Ids{40, 1101, 994, 11, 484, 821, 407, 26, 460, 470}));
  EXPECT_EQ(t->encode("日本語"), (Ids{33768, 98, 17312, 105, 45739, 252}));
  EXPECT_EQ(t->encode("👍🏽"), (Ids{41840, 235, 8582, 237, 121}));
  EXPECT_EQ(t->encode("e\xCC\x81"), (Ids{68, 136, 223}));
  EXPECT_EQ(t->encode("   x"), (Ids{220, 220, 2124}));
  EXPECT_EQ(t->encode("line\n\nnext\n"), (Ids{1370, 198, 198, 19545, 198}));
  EXPECT_EQ(t->encode("1234567890"), (Ids{10163, 2231, 30924, 3829}));
  EXPECT_EQ(t->encode("aaaaaaaaaaaaaaaa"), (Ids{24794, 24794, 24794, 24794}));
  EXPECT_EQ(t->encode(""), Ids{});
}

TEST(Gpt2Bpe, TheCacheGivesTheSameIds) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  const Ids first = t->encode("the cat and the hat and the bat");
  EXPECT_EQ(t->encode("the cat and the hat and the bat"), first);
}

TEST(Gpt2Bpe, DecodeOfEncodeIsTheText) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  const std::vector<std::string> texts = {
      "Hello world",
      "  two  spaces  and trailing  ",
      "\n\n\nnewlines\n\n",
      "tabs\t\tand\r\nCRLF",
      "I'm you're we've they'll he'd it's can't 'quoted'",
      "numbers 12345 3.14159 1,000,000",
      "?!...;:--()[]{}",
      "naïve café 日本語のテキスト 한국어 русский ελληνικά العربية",
      "emoji 👍🏽👨‍👩‍👧 ok",
      "e\xCC\x81 a\xCC\x8A combining",
      "<|endoftext|> in text",
      std::string(1000, ' ') + "x",
      std::string(3000, 'a'),
      std::string(500, '!'),
  };
  for (const auto& s : texts) EXPECT_EQ(t->decode(t->encode(s)), s) << s;
}

TEST(Gpt2Bpe, AnyBytesRoundTrip) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(t->decode(t->encode(all)), all);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    EXPECT_EQ(t->decode(t->encode(s)), s);
  }
}

TEST(Gpt2Bpe, UnknownIdsDecodeAsReplacementCharacters) {
  BpeTokenizer* t = gpt2();
  if (!t) return;
  EXPECT_EQ(t->decode(Ids{15496, 50257, -1}), "Hello\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
