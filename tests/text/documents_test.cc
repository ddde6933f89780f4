// llm.c's document convention (end-of-text before every document, a blank
// line ends one) and the validation split at a document start.
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

TEST(Documents, ValidationStartsAtTheNearestDocument) {
  // 20 tokens, documents (9) at 0, 8 and 15: the last 10% (2 tokens) moves to 15.
  Ids tokens(20, 1);
  tokens[0] = tokens[8] = tokens[15] = 9;
  auto s = split_validation(tokens, 0.1, 9);
  EXPECT_EQ(s.train.size(), 15u);
  EXPECT_EQ(s.val.size(), 5u);
  EXPECT_EQ(s.val.front(), 9);
  // 40%: the cut at 12 is nearer 15 than 8.
  s = split_validation(tokens, 0.4, 9);
  EXPECT_EQ(s.train.size(), 15u);
  s = split_validation(tokens, 0.55, 9);
  EXPECT_EQ(s.train.size(), 8u);
  // One document: the exact cut; at least one token on each side.
  s = split_validation(Ids(10, 1), 0.3, 9);
  EXPECT_EQ(s.train.size(), 7u);
  EXPECT_EQ(s.val.size(), 3u);
  s = split_validation(Ids(10, 1), 0.01, 9);
  EXPECT_EQ(s.val.size(), 1u);
  s = split_validation(Ids{9, 1}, 0.9, 9);
  EXPECT_EQ(s.train, Ids{9});
  EXPECT_EQ(s.val, Ids{1});
}

}  // namespace
