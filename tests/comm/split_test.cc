// SPDX-License-Identifier: Apache-2.0
// Communicator::split on the thread backend: the shared checks
// (split_cases.h) at several world and group sizes, splits of splits, and
// failures that cross a split (a rank failing anywhere stops the ranks
// waiting in any group, and the root cause is what the run reports).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/world.h"
#include "split_cases.h"
#include "support/rank_harness.h"

namespace zerodp::comm {
namespace {

struct Layout {
  int world;
  int group;
};

class ThreadSplit : public ::testing::TestWithParam<Layout> {};

TEST_P(ThreadSplit, GroupsAndReplicasMatchTheWorld) {
  const Layout l = GetParam();
  zerodp::testing::run_on_ranks(l.world, [&](Communicator& c) { split_cases::check_split(c, l.group); });
}

INSTANTIATE_TEST_SUITE_P(Layouts, ThreadSplit,
                         ::testing::Values(Layout{1, 1}, Layout{2, 1}, Layout{2, 2}, Layout{4, 2}, Layout{4, 4},
                                           Layout{6, 2}, Layout{6, 3}, Layout{8, 2}, Layout{8, 4}, Layout{3, 3},
                                           Layout{7, 7}, Layout{7, 1}),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           return "n" + std::to_string(info.param.world) + "_g" + std::to_string(info.param.group);
                         });

TEST(ThreadSplit, SplitsOfASplitAreIndependentGroups) {
  zerodp::testing::run_on_ranks(8, [](Communicator& c) {
    auto half = c.split(c.rank() / 4);
    auto quarter = half->split(half->rank() / 2);
    EXPECT_EQ(quarter->size(), 2);
    EXPECT_EQ(quarter->rank(), c.rank() % 2);
    EXPECT_EQ(quarter->all_reduce_uint64(static_cast<uint64_t>(c.rank()), ReduceOp::kSum),
              static_cast<uint64_t>(c.rank() / 2 * 4 + 1));
    // A second split of the same parent is a new group, not the first one.
    auto again = c.split(c.rank() % 2);
    EXPECT_EQ(again->size(), 4);
    EXPECT_EQ(again->all_reduce_uint64(1, ReduceOp::kSum), 4u);
  });
}

TEST(ThreadSplit, NegativeColorIsAnError) {
  zerodp::testing::run_on_ranks(1, [](Communicator& c) { EXPECT_THROW((void)c.split(-1), CommError); });
}

// A long timeout: if a failure did not cross the split, the waiting ranks
// would sit in their groups for ten minutes and the test would time out.
CommOptions patient() { return CommOptions{.timeout = std::chrono::minutes(10)}; }

TEST(ThreadSplitFailure, ARankThatFailsStopsRanksWaitingInOtherGroups) {
  try {
    run_thread_ranks(4, patient(), [](Communicator& c) {
      auto inside = c.split(c.rank() / 2);
      auto across = c.split(c.rank() % 2);
      if (c.rank() == 3) throw std::runtime_error("rank 3 gave up");
      // Rank 2 waits in its group for rank 3; ranks 0 and 1 pass their group
      // and wait across for ranks 2 and 3.
      inside->barrier();
      across->barrier();
    });
    FAIL() << "the run should fail";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 3 gave up");
  }
}

TEST(ThreadSplitFailure, AFailureInsideAGroupIsTheRootCauseAndStopsTheParent) {
  try {
    run_thread_ranks(4, patient(), [](Communicator& c) {
      auto inside = c.split(c.rank() / 2);
      if (c.rank() == 1) {
        inside->abort("rank 1 broke its group");
        throw std::runtime_error("rank 1 failed in its group");
      }
      if (c.rank() == 0) inside->barrier();  // waits for rank 1 in the group
      c.barrier();                           // the others wait in the parent
    });
    FAIL() << "the run should fail";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1 failed in its group");
  }
}

}  // namespace
}  // namespace zerodp::comm
