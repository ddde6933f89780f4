// SPDX-License-Identifier: Apache-2.0
#include "zero/partition_plan.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace zerodp::zero {
namespace {

TEST(PartitionPlan, ShardsCoverEveryUnitExactlyOnce) {
  const std::vector<size_t> counts = {433, 1, 0, 7, 64};
  for (int n : {1, 2, 3, 4, 7, 9}) {
    const PartitionPlan plan(counts, n);
    EXPECT_EQ(plan.num_params(), 505u);
    EXPECT_EQ(plan.largest_unit(), 433u);
    size_t total_owned = 0;
    for (int r = 0; r < n; ++r) total_owned += plan.owned_count(r);
    EXPECT_EQ(total_owned, plan.num_params()) << n;  // no padding
    for (size_t u = 0; u < counts.size(); ++u) {
      size_t next = 0;
      for (int r = 0; r < n; ++r) {
        const auto s = plan.shard(u, r);
        EXPECT_EQ(s.offset, next) << "unit " << u << " rank " << r;
        next += s.count;
      }
      EXPECT_EQ(next, counts[u]);
    }
    // Owned offsets are the running sum of the rank's shards.
    for (int r = 0; r < n; ++r) {
      size_t offset = 0;
      for (size_t u = 0; u < counts.size(); ++u) {
        EXPECT_EQ(plan.owned_offset(u, r), offset);
        offset += plan.shard(u, r).count;
      }
      EXPECT_LE(plan.owned_count(r), plan.max_owned_count());
    }
  }
}

TEST(PartitionPlan, RejectsNoRanks) {
  const std::vector<size_t> counts = {4};
  EXPECT_THROW(PartitionPlan(counts, 0), ConfigError);
}

}  // namespace
}  // namespace zerodp::zero
