// SPDX-License-Identifier: Apache-2.0
#include "comm/shard.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace zerodp::comm {
namespace {

TEST(ShardRange, FirstRanksHoldTheRemainder) {
  // 10 over 4: 3, 3, 2, 2.
  EXPECT_EQ(shard_range(10, 4, 0), (ShardRange{0, 3}));
  EXPECT_EQ(shard_range(10, 4, 1), (ShardRange{3, 3}));
  EXPECT_EQ(shard_range(10, 4, 2), (ShardRange{6, 2}));
  EXPECT_EQ(shard_range(10, 4, 3), (ShardRange{8, 2}));
}

TEST(ShardRange, FewerElementsThanRanksGivesEmptyShards) {
  EXPECT_EQ(shard_range(2, 4, 0), (ShardRange{0, 1}));
  EXPECT_EQ(shard_range(2, 4, 1), (ShardRange{1, 1}));
  EXPECT_EQ(shard_range(2, 4, 2), (ShardRange{2, 0}));
  EXPECT_EQ(shard_range(2, 4, 3), (ShardRange{2, 0}));
  EXPECT_EQ(shard_range(0, 3, 1), (ShardRange{0, 0}));
}

TEST(ShardRange, ShardsTileTheBufferInRankOrder) {
  for (size_t count : {0ul, 1ul, 6ul, 7ul, 1009ul, 1048579ul}) {
    for (int n : {1, 2, 3, 4, 7, 16}) {
      size_t next = 0;
      for (int r = 0; r < n; ++r) {
        const ShardRange s = shard_range(count, n, r);
        EXPECT_EQ(s.offset, next) << count << " over " << n << ", rank " << r;
        EXPECT_TRUE(s.count == count / n || s.count == count / n + 1);
        next += s.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(ShardRange, RejectsBadRanks) {
  EXPECT_THROW(shard_range(10, 0, 0), ConfigError);
  EXPECT_THROW(shard_range(10, 4, 4), ConfigError);
  EXPECT_THROW(shard_range(10, 4, -1), ConfigError);
}

}  // namespace
}  // namespace zerodp::comm
