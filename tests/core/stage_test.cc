// SPDX-License-Identifier: Apache-2.0
// The stage table (core/stage.h) against the ZeRO paper's definitions: each
// stage partitions one more model state than the one before, in the order
// optimizer states, gradients, parameters; stages 0-2 move 2Φ per step and
// stage 3 3Φ (section 7). Numbers in and out only through parse_stage and
// stage_number.
#include "core/stage.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace zerodp {
namespace {

TEST(Stage, NumbersRoundTripAndOthersAreRefusedNamingTheSource) {
  for (int n = 0; n <= 3; ++n) EXPECT_EQ(stage_number(parse_stage(n, "[test] --stage")), n);
  for (int64_t bad : {int64_t{-1}, int64_t{4}, int64_t{7}, int64_t{1} << 40}) {
    try {
      parse_stage(bad, "[train] --stage");
      FAIL() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.message(),
                fmt::format("[train] --stage {}: ZeRO stage {} does not exist; use 0, 1, 2 or 3", bad, bad));
    }
  }
  EXPECT_EQ(fmt::format("stage {} | {:>3}", Stage::k2, Stage::k3), "stage 2 |   3");
}

TEST(Stage, EachStagePartitionsOneMoreStateThanTheOneBefore) {
  auto partitioned = [](Stage s) {
    const StageTraits& t = traits(s);
    return int{t.partitions_optimizer} + int{t.partitions_grads} + int{t.partitions_params};
  };
  for (Stage s : kAllStages) {
    const StageTraits& t = traits(s);
    EXPECT_EQ(t.stage, s);
    EXPECT_EQ(partitioned(s), stage_number(s));
    EXPECT_TRUE(!t.partitions_grads || t.partitions_optimizer);
    EXPECT_TRUE(!t.partitions_params || t.partitions_grads);
    // Whoever holds only a shard of the parameters gathers them for use.
    EXPECT_EQ(t.gathers_on_acquire, t.partitions_params);
  }
  EXPECT_EQ(traits(Stage::k0).paper_name, "plain data parallel");
  EXPECT_EQ(traits(Stage::k1).paper_name, "P_os");
  EXPECT_EQ(traits(Stage::k2).paper_name, "P_os+g");
  EXPECT_EQ(traits(Stage::k3).paper_name, "P_os+g+p");
}

TEST(Stage, CollectivesPerStepAreThePapersTwoOrThreePhiPerReduction) {
  for (int a : {1, 2, 5}) {
    EXPECT_EQ(collectives_per_step(Stage::k0, a), 2 * a);  // an all-reduce per micro-batch
    EXPECT_EQ(collectives_per_step(Stage::k1, a), a + 1);  // reduce-scatters + one all-gather
    EXPECT_EQ(collectives_per_step(Stage::k2, a), a + 1);
    EXPECT_EQ(collectives_per_step(Stage::k3, a), 3 * a);  // + forward and backward gathers
  }
  for (Stage s : kAllStages) EXPECT_FALSE(keeps_owned_accumulator(s, 1));
  EXPECT_FALSE(keeps_owned_accumulator(Stage::k0, 4));
  EXPECT_TRUE(keeps_owned_accumulator(Stage::k1, 4));
  EXPECT_FALSE(keeps_owned_accumulator(Stage::k2, 4));
  EXPECT_FALSE(keeps_owned_accumulator(Stage::k3, 4));
}

}  // namespace
}  // namespace zerodp
