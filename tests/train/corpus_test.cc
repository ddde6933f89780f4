// SPDX-License-Identifier: Apache-2.0
#include "train/corpus.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"

namespace zerodp::train {
namespace {

TEST(Corpus, ArithmeticHoldsOutProblemsThatNeverAppearInTraining) {
  const Corpus c = arithmetic_corpus();
  ASSERT_FALSE(c.held_out.empty());
  EXPECT_EQ(c.vocab, 256);
  const std::string train = tokens_to_text(c.train);
  std::set<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < train.size(); ++i) {
    if (train[i] == '\n') {
      lines.insert(train.substr(start, i - start + 1));
      start = i + 1;
    }
  }
  EXPECT_EQ(lines.size() + c.held_out.size(), 100u * 100u);
  for (const auto& p : c.held_out) {
    ASSERT_EQ(lines.count(p.prompt() + p.answer()), 0u) << p.prompt();
  }
  EXPECT_EQ((ArithmeticProblem{7, 95}.prompt() + ArithmeticProblem{7, 95}.answer()), "07+95=102\n");
  // Generated the same way every time.
  EXPECT_EQ(arithmetic_corpus().train, c.train);
}

TEST(Corpus, TextFilesAreBytesWithTheLastTenthHeldOut) {
  const auto path = std::filesystem::temp_directory_path() / "zerodp_corpus_test.txt";
  {
    std::ofstream out(path);
    for (int i = 0; i < 100; ++i) out << "abcdefghij";
  }
  const Corpus c = load_corpus(path.string());
  EXPECT_EQ(c.train.size(), 900u);
  EXPECT_EQ(c.val.size(), 100u);
  EXPECT_EQ(c.train[1], 'b');
  std::filesystem::remove(path);
}

TEST(Corpus, MissingAndEmptyFilesAreConfigErrors) {
  EXPECT_THROW(load_corpus("/nonexistent/zerodp.txt"), ConfigError);
  const auto empty = std::filesystem::temp_directory_path() / "zerodp_empty.txt";
  std::ofstream(empty).close();
  EXPECT_THROW(load_corpus(empty.string()), ConfigError);
  std::filesystem::remove(empty);
  EXPECT_THROW(load_corpus(std::filesystem::temp_directory_path().string()), ConfigError);
}

}  // namespace
}  // namespace zerodp::train
