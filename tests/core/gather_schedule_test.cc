// SPDX-License-Identifier: Apache-2.0
// Stage 3's gather region and schedule (core/gather_schedule.h): where
// gathered units go, and which forward gathers stay for the unit's next use.
#include "core/gather_schedule.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace zerodp {
namespace {

TEST(GatherRegion, StartThenEndThenTheLowestGap) {
  GatherRegion r(100);
  EXPECT_EQ(r.allocate(30), 0u);
  EXPECT_EQ(r.allocate(20), 80u);  // flush with the end
  EXPECT_EQ(r.allocate(10), 30u);  // the lowest gap
  EXPECT_EQ(r.allocate(41), std::nullopt);
  EXPECT_EQ(r.allocate(40), 40u);
  EXPECT_EQ(r.live(), 4u);
  r.free(0);
  EXPECT_EQ(r.allocate(30), 0u);
  EXPECT_EQ(r.allocate(101), std::nullopt);
  EXPECT_THROW(r.free(7), Error);
}

// With one range of at most half the region alive, a second always fits,
// wherever the first went: the engine's schedule without kept gathers.
TEST(GatherRegion, TwoHalvesAlwaysFit) {
  for (uint64_t a = 1; a <= 50; a += 7) {
    for (uint64_t b = 1; b <= 50; b += 3) {
      for (uint64_t c = 1; c <= 50; c += 5) {
        GatherRegion r(100);
        const auto x = r.allocate(a);
        const auto y = r.allocate(b);
        ASSERT_TRUE(x && y);
        r.free(*x);
        const auto z = r.allocate(c);
        ASSERT_TRUE(z) << a << " " << b << " " << c;
        r.free(*y);
        ASSERT_TRUE(r.allocate(50)) << a << " " << b << " " << c;
      }
    }
  }
}

// GPT's shape: the embedding (unit 0) read by the first and the last op, two
// blocks and the final layernorm between; the embedding's backward reads no
// weights.
GatherOps gpt_like(uint64_t embedding, uint64_t block) {
  return GatherOps{{embedding, block, block, 2}, {0, 1, 2, 3, 0}, {false, true, true, true, true}};
}

TEST(GatherSchedule, KeepsTheEmbeddingForTheHeadWhereTheRegionHoldsItBesideTwoBlocks) {
  const GatherSchedule s = gather_schedule(gpt_like(100, 30), /*prefetch=*/true);
  EXPECT_EQ(s.region_elements, 200u);
  EXPECT_EQ(s.pass_to, (std::vector<int>{4, -1, -1, -1, -1}));
  // The embedding once (the head takes it, keeps it for its backward, and
  // the embedding's backward reads nothing); the rest forward and backward.
  EXPECT_EQ(s.gathers, (std::vector<int>{1, 2, 2, 2, 0}));
}

TEST(GatherSchedule, GathersTheEmbeddingAgainWhereTheBlocksLeaveNoRoom) {
  const GatherSchedule s = gather_schedule(gpt_like(40, 100), true);
  EXPECT_EQ(s.region_elements, 200u);
  EXPECT_EQ(s.pass_to, std::vector<int>(5, -1));
  EXPECT_EQ(s.gathers, (std::vector<int>{1, 2, 2, 2, 1}));
  // Without prefetch the region is one unit: nothing stays beside another.
  const GatherSchedule serial = gather_schedule(gpt_like(100, 30), false);
  EXPECT_EQ(serial.region_elements, 100u);
  EXPECT_EQ(serial.pass_to, std::vector<int>(5, -1));
  EXPECT_EQ(serial.gathers, (std::vector<int>{1, 2, 2, 2, 1}));
}

TEST(GatherSchedule, UntiedLayersGatherTwiceButTheFirstAndTheLast) {
  // An MLP: the first layer's backward reads no weights, the last keeps
  // its forward gather for backward.
  const GatherSchedule s = gather_schedule(GatherOps{{10, 20, 30}, {0, 1, 2}, {false, true, true}}, true);
  EXPECT_EQ(s.pass_to, std::vector<int>(3, -1));
  EXPECT_EQ(s.gathers, (std::vector<int>{1, 2, 1}));
  const GatherSchedule one = gather_schedule(GatherOps{{10}, {0}, {true}}, true);
  EXPECT_EQ(one.region_elements, 10u);
  EXPECT_EQ(one.gathers, (std::vector<int>{1}));
}

TEST(GatherSchedule, RefusesAnOpWithoutItsUnit) {
  EXPECT_THROW(gather_schedule(GatherOps{{10}, {1}, {true}}, true), Error);
  EXPECT_THROW(gather_schedule(GatherOps{{10}, {0}, {}}, true), Error);
}

}  // namespace
}  // namespace zerodp
