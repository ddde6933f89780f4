// SPDX-License-Identifier: Apache-2.0
// The typed small collectives on thread ranks (N = 1..4), plus what only one
// process can check: the refused op, the overflowing sum, and that one rank's
// bad call fails every rank instead of hanging.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "comm/reduce.h"
#include "comm/world.h"
#include "small_values.h"
#include "support/rank_harness.h"
#include "support/same_bits.h"

namespace zerodp::comm {
namespace {

using zerodp::testing::run_on_ranks;

class SmallValues : public ::testing::TestWithParam<int> {};

TEST_P(SmallValues, ExactInRankOrderAndCounted) { run_on_ranks(GetParam(), small_values::check_small_values); }

INSTANTIATE_TEST_SUITE_P(Ranks, SmallValues, ::testing::Values(1, 2, 3, 4), [](const auto& info) {
  std::string name = "n";  // (GCC 12's -Wrestrict misfires on "n" + std::string)
  name += std::to_string(info.param);
  return name;
});

using ::zerodp::testing::contains;

TEST(IntAllReduce, SumPastTwoToTheSixtyFourIsAnErrorOnEveryRank) {
  std::atomic<int> failures{0};
  run_on_ranks(3, [&](Communicator& c) {
    try {
      c.all_reduce_uint64(std::numeric_limits<uint64_t>::max() / 2, ReduceOp::kSum);
      ADD_FAILURE() << "rank " << c.rank() << ": expected an overflow error";
    } catch (const CommError& e) {
      EXPECT_TRUE(contains(e.what(), "[all_reduce_uint64] rank " + std::to_string(c.rank()) +
                                         ": the sum of the ranks' values exceeds 2^64 - 1"))
          << e.what();
      ++failures;
    }
    EXPECT_TRUE(c.broken());
  });
  EXPECT_EQ(failures.load(), 3);
}

TEST(IntAllReduce, AvgIsRefusedBeforeAnyCommunication) {
  // One rank alone: nothing waits for a peer, the refusal is local.
  run_on_ranks(1, [](Communicator& c) {
    try {
      c.all_reduce_uint64(4, ReduceOp::kAvg);
      ADD_FAILURE() << "expected kAvg to be refused";
    } catch (const CommError& e) {
      EXPECT_TRUE(contains(e.what(), "[all_reduce_uint64] rank 0: op avg has no exact integer result")) << e.what();
    }
    EXPECT_EQ(c.stats()[Collective::kIntAllReduce].calls, 0u);
  });
}

TEST(IntAllReduce, ReduceUint64sIsExact) {
  const uint64_t two53 = uint64_t{1} << 53;
  const uint64_t values[] = {two53 + 1, two53 + 1, 1};
  EXPECT_EQ(reduce_uint64s(values, ReduceOp::kSum), 2 * two53 + 3);
  EXPECT_EQ(reduce_uint64s(values, ReduceOp::kMax), two53 + 1);
  EXPECT_FALSE(reduce_uint64s(values, ReduceOp::kAvg).has_value());
  const uint64_t big[] = {std::numeric_limits<uint64_t>::max(), 1};
  EXPECT_FALSE(reduce_uint64s(big, ReduceOp::kSum).has_value());
  EXPECT_EQ(reduce_uint64s(big, ReduceOp::kMax), std::numeric_limits<uint64_t>::max());
}

TEST(ValueAllGather, WrongOutputSizeAndOverlapAreRefused) {
  run_on_ranks(1, [](Communicator& c) {
    std::byte value[4] = {};
    std::byte out[8] = {};
    EXPECT_THROW(c.all_gather_value_bytes(value, std::span<std::byte>(out, 8)), CommError);
  });
  run_on_ranks(1, [](Communicator& c) {
    std::byte out[4] = {};
    EXPECT_THROW(c.all_gather_value_bytes(std::span<const std::byte>(out, 4), std::span<std::byte>(out, 4)), CommError);
  });
}

}  // namespace
}  // namespace zerodp::comm
