// SPDX-License-Identifier: Apache-2.0
// llm.c's document convention (end-of-text before every document, a blank
// line ends one) and the validation split.
#include <gtest/gtest.h>

#include <vector>

#include "text/documents.h"
#include "text_test_util.h"

namespace {

using zerodp::text::encode_documents;
using zerodp::text::split_validation;
using zerodp::text_testing::gpt2;
using Ids = std::vector<int32_t>;
constexpr int32_t kEot = zerodp::text::kGpt2EndOfText;

TEST(Documents, EveryDocumentStartsWithEndOfText) {
  auto* t = gpt2();
  if (!t) return;
  auto docs = [&](const std::string& text) {
    Ids out;
    encode_documents(*t, text, out);
    return out;
  };
  EXPECT_EQ(docs(""), Ids{kEot});
  EXPECT_EQ(docs("Hello world"), (Ids{kEot, 15496, 995}));
  // "\n\n" stays with the document before the end-of-text (llm.c's
  // tinyshakespeare.py); a third newline starts the next document.
  Ids want{kEot};
  for (int32_t id : t->encode("Hello world\n\n")) want.push_back(id);
  want.push_back(kEot);
  for (int32_t id : t->encode("\nnext\n\n")) want.push_back(id);
  want.push_back(kEot);
  EXPECT_EQ(docs("Hello world\n\n\nnext\n\n"), want);
}

TEST(Documents, ValidationIsTheLastFractionOfTheTokens) {
  Ids tokens(20);
  for (int i = 0; i < 20; ++i) tokens[i] = i;
  auto s = split_validation(tokens, 0.1);
  EXPECT_EQ(s.train, Ids(tokens.begin(), tokens.begin() + 18));
  EXPECT_EQ(s.val, (Ids{18, 19}));
  s = split_validation(tokens, 0.55);
  EXPECT_EQ(s.train.size(), 9u);
  EXPECT_EQ(s.val.size(), 11u);
  // At least one token on each side.
  s = split_validation(Ids(10, 1), 0.01);
  EXPECT_EQ(s.val.size(), 1u);
  s = split_validation(Ids{9, 1}, 0.9);
  EXPECT_EQ(s.train, Ids{9});
  EXPECT_EQ(s.val, Ids{1});
}

}  // namespace
