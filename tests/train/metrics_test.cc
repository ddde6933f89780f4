// SPDX-License-Identifier: Apache-2.0
// The trainer's side of the metrics record (train/metrics.h): a step's
// result and every rank's figures become a report::StepRecord as the file
// promises (docs/train.md): grad_norm absent on a skipped step, val_loss only
// when computed, collectives without calls left out, every ledger category.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/metrics_record.h"
#include "train/metrics.h"
#include "zero/engine.h"

namespace zerodp::train {
namespace {

TEST(MetricsRecordFromTrainer, StepRecordCarriesTheFigures) {
  zero::StepResult r;
  r.loss = 2.5;
  r.grad_norm = 0.75;
  r.lr = 0.001;
  r.loss_scale = 1024.0;
  r.clipped = true;
  std::vector<RankMemory> memory(2);
  memory[1].current[static_cast<size_t>(zero::MemoryCategory::kParams)] = 10;
  memory[1].peak[static_cast<size_t>(zero::MemoryCategory::kParams)] = 20;
  memory[1].model_states = 30;
  std::vector<comm::CommStats> step_comm(2);
  step_comm[0][comm::Collective::kAllGather] = {2, 100, 200, 0.5};
  step_comm[1][comm::Collective::kAllGather] = {2, 100, 200, 0.5};
  step_comm[1][comm::Collective::kReduceScatter] = {1, 50, 60, 0.25};

  const report::StepRecord s = step_record(7, r, 0.5, 1000.0, -1.0, memory, step_comm);
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.loss, 2.5);
  EXPECT_FALSE(s.val_loss.has_value());  // negative: not computed this step
  EXPECT_EQ(s.grad_norm, 0.75);
  EXPECT_EQ(s.lr, 0.001);
  EXPECT_EQ(s.loss_scale, 1024.0);
  EXPECT_TRUE(s.clipped);
  EXPECT_FALSE(s.skipped);
  EXPECT_EQ(s.tokens_per_s, 2000.0);
  EXPECT_EQ(s.step_seconds, 0.5);
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(s.memory[0].categories.size(), zero::kNumMemoryCategories);
  const std::string params(zero::memory_category_name(zero::MemoryCategory::kParams));
  EXPECT_EQ(s.memory[1].categories.at(params).current, 10u);
  EXPECT_EQ(s.memory[1].categories.at(params).peak, 20u);
  EXPECT_EQ(s.memory[1].model_states, 30u);
  ASSERT_EQ(s.comm.size(), 2u);
  EXPECT_EQ(s.comm[0].size(), 1u);  // no calls, no entry
  const std::string scatter(comm::collective_name(comm::Collective::kReduceScatter));
  EXPECT_EQ(s.comm[1].at(scatter).calls, 1u);
  EXPECT_EQ(s.comm[1].at(scatter).bytes_sent, 50u);
  EXPECT_EQ(s.comm[1].at(scatter).bytes_received, 60u);
}

TEST(MetricsRecordFromTrainer, SkippedStepHasNoGradNormAndEvalStepHasValLoss) {
  zero::StepResult r;
  r.loss = 3.0;
  r.grad_norm = 123.0;  // what an overflowed step measured: not written
  r.skipped = true;
  const report::StepRecord s = step_record(1, r, 1.0, 10.0, 2.75, {}, {});
  EXPECT_TRUE(s.skipped);
  EXPECT_FALSE(s.grad_norm.has_value());
  EXPECT_EQ(s.val_loss, 2.75);
  EXPECT_TRUE(report::to_json(s)["grad_norm"].is_null());
}

}  // namespace
}  // namespace zerodp::train
