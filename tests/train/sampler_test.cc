// SPDX-License-Identifier: Apache-2.0
#include "train/sampler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "core/error.h"

namespace zerodp::train {
namespace {

std::vector<int32_t> counting_stream(size_t n) {
  std::vector<int32_t> s(n);
  std::iota(s.begin(), s.end(), 0);
  return s;
}

TEST(Sampler, TargetsAreTheNextTokens) {
  const auto stream = counting_stream(1000);
  const DistributedSampler sampler(stream, 16, 3, 2, 7);
  const TokenBatch b = sampler.batch(5, 0, 1);
  ASSERT_EQ(b.tokens.size(), 48u);
  for (size_t i = 0; i < b.tokens.size(); ++i) {
    EXPECT_EQ(b.targets[i], b.tokens[i] + 1);
    if (i % 16 != 0) {
      EXPECT_EQ(b.tokens[i], b.tokens[i - 1] + 1);
    }
  }
}

// The same global batch at any N: 2 ranks x micro-batch 4 and 4 ranks x
// micro-batch 2 cover the same 8 windows of a step, each exactly once.
TEST(Sampler, GlobalBatchDoesNotDependOnTheNumberOfRanks) {
  const auto stream = counting_stream(100000);
  auto windows = [&](int ranks, int micro_batch, int accum) {
    const DistributedSampler sampler(stream, 8, micro_batch, ranks, 99);
    std::multiset<int32_t> starts;
    for (int m = 0; m < accum; ++m) {
      for (int r = 0; r < ranks; ++r) {
        const TokenBatch b = sampler.batch(3, m, r);
        for (int i = 0; i < micro_batch; ++i) starts.insert(b.tokens[i * 8]);
      }
    }
    return starts;
  };
  EXPECT_EQ(windows(2, 4, 1), windows(4, 2, 1));
  EXPECT_EQ(windows(1, 8, 1), windows(2, 2, 2));
  EXPECT_NE(windows(2, 4, 1), windows(2, 4, 2));  // more accumulation: more samples
}

TEST(Sampler, StepsDifferAndRunsRepeat) {
  const auto stream = counting_stream(100000);
  const DistributedSampler a(stream, 8, 4, 2, 1), b(stream, 8, 4, 2, 1), other_seed(stream, 8, 4, 2, 2);
  EXPECT_EQ(a.batch(10, 0, 1).tokens, b.batch(10, 0, 1).tokens);
  EXPECT_NE(a.batch(10, 0, 1).tokens, a.batch(11, 0, 1).tokens);
  EXPECT_NE(a.batch(10, 0, 1).tokens, other_seed.batch(10, 0, 1).tokens);
}

TEST(Sampler, RefusesDataShorterThanOneSequence) {
  const auto stream = counting_stream(16);
  EXPECT_THROW(DistributedSampler(stream, 16, 1, 1, 0), ConfigError);
  EXPECT_NO_THROW(DistributedSampler(stream, 15, 1, 1, 0));
}

}  // namespace
}  // namespace zerodp::train

namespace zerodp::train {
namespace {

TEST(Sampler, AlignedWindowsStartOnRecordBoundaries) {
  const auto stream = counting_stream(10000);
  const DistributedSampler sampler(stream, 32, 8, 2, 5, /*alignment=*/10);
  for (int64_t step = 0; step < 20; ++step) {
    const TokenBatch b = sampler.batch(step, 0, 1);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(b.tokens[static_cast<size_t>(i) * 32] % 10, 0);
      ASSERT_LE(b.tokens[static_cast<size_t>(i) * 32] + 32, 9999);  // the last target exists
    }
  }
}

}  // namespace
}  // namespace zerodp::train
