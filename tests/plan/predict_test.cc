// SPDX-License-Identifier: Apache-2.0
// The predictor `zerodp train --max-memory` calls: src/model's configs in,
// the busiest rank's ledger out, and the smallest stage that fits.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "model/presets.h"
#include "plan/engine_memory.h"
#include "plan/model_shape.h"
#include "plan/predict.h"

namespace zerodp::plan {
namespace {

RunShape four_ranks(int stage) {
  RunShape run;
  run.stage = static_cast<Stage>(stage);
  run.ranks = 4;
  run.dtype = Dtype::bf16();
  run.micro_batch = 2;
  run.seq_len = 64;
  return run;
}

TEST(Predict, ScheduleOfAGptAndAnMlp) {
  const model::ModelConfig gpt = model::model_preset("gpt-tiny");
  const UnitSchedule g = unit_schedule(gpt);
  EXPECT_EQ(g.num_params(), model::num_params(gpt));
  EXPECT_EQ(g.op_units.front(), 0);
  EXPECT_EQ(g.op_units.back(), 0);  // the tied LM head
  EXPECT_EQ(g.op_units.size(), g.unit_counts.size() + 1);
  const model::ModelConfig mlp = model::model_preset("mlp-small");
  EXPECT_EQ(unit_schedule(mlp).num_params(), model::num_params(mlp));
  // The planner's hand-made GPT schedule (plan --model) is the model's.
  const UnitSchedule hand = gpt_unit_schedule(*find_preset("gpt-tiny"));
  EXPECT_EQ(hand.unit_counts, g.unit_counts);
  EXPECT_EQ(hand.op_units, g.op_units);
  EXPECT_EQ(hand.op_backward_reads, g.op_backward_reads);
  EXPECT_EQ(hand.op_weight_grad_apart, g.op_weight_grad_apart);
  EXPECT_EQ(hand.op_bf16_widened, g.op_bf16_widened);
  EXPECT_EQ(hand.unit_grad_rows, g.unit_grad_rows);
  EXPECT_TRUE(hand.reads_bf16_weights && g.reads_bf16_weights);
  EXPECT_FALSE(unit_schedule(mlp).reads_bf16_weights);
}

TEST(Predict, MemoryShrinksWithTheStageAndTheSmallestFittingStageIsFound) {
  const model::ModelConfig gpt = model::model_preset("gpt-10m");
  const auto stages = predict_stages(gpt, four_ranks(0));
  EXPECT_GT(stages[0].model_states(), stages[1].model_states());
  EXPECT_GT(stages[1].model_states(), stages[2].model_states());
  EXPECT_GT(stages[2].model_states(), stages[3].model_states());
  // Just enough for stage 2: stages 0 and 1 do not fit, 2 does.
  const uint64_t limit = stages[2].resident();
  ASSERT_LT(limit, stages[1].resident());
  EXPECT_EQ(smallest_fitting_stage(gpt, four_ranks(0), limit), Stage::k2);
  EXPECT_EQ(smallest_fitting_stage(gpt, four_ranks(0), limit - 1), Stage::k3);
  EXPECT_EQ(smallest_fitting_stage(gpt, four_ranks(0), 1000), std::nullopt);
  const LocalRanks one{0, 1};
  EXPECT_NO_THROW(check_memory_fits(gpt, four_ranks(2), one, 0, limit));
  try {
    check_memory_fits(gpt, four_ranks(0), one, 0, limit);
    FAIL() << "stage 0 should not fit";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ZeRO stage 0 needs"), std::string::npos) << what;
    EXPECT_NE(what.find("stage 2 would fit"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  try {
    check_memory_fits(gpt, four_ranks(0), one, 0, 1000);
    FAIL() << "nothing fits 1000 bytes";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no stage fits"), std::string::npos) << e.what();
  }
}

// Where no stage fits in RAM but one would with the optimizer states on
// disk, the refusal says so, with the disk's bytes per rank.
TEST(Predict, TheRefusalOffersOffloadWhereItWouldFit) {
  const model::ModelConfig gpt = model::model_preset("gpt-10m");
  RunShape run = four_ranks(3);
  run.dtype = Dtype::bf16();
  RunShape offloaded = run;
  offloaded.offload_optimizer = true;
  const LocalRanks one{0, 1};
  const uint64_t fits = predict_process(gpt, offloaded, one, 0).total();
  ASSERT_LT(fits, predict_process(gpt, run, one, 0).total());
  try {
    check_memory_fits(gpt, run, one, 0, fits);
    FAIL() << "stage 3 in RAM should not fit";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("with --offload-optimizer DIR would fit"), std::string::npos) << what;
    EXPECT_NE(what.find("on a local disk, "), std::string::npos) << what;
    EXPECT_NE(what.find(" per rank)"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(check_memory_fits(gpt, offloaded, one, 0, fits));
  // Where only the parameters' going too would fit, that is offered.
  RunShape both = offloaded;
  both.offload_params = true;
  const uint64_t fits_both = predict_process(gpt, both, one, 0).total();
  ASSERT_LT(fits_both, fits);
  try {
    check_memory_fits(gpt, run, one, 0, fits_both);
    FAIL() << "stage 3 with the states alone offloaded should not fit";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 3 with --offload-optimizer DIR --offload-params DIR would fit"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_memory_fits(gpt, both, one, 0, fits_both));
}

// Thread ranks share one process: it needs every rank's memory and its
// baseline, and the refusal names the stage at which all of it fits.
TEST(Predict, AProcessOfThreadRanksNeedsAllOfThemPlusItsBaseline) {
  const model::ModelConfig gpt = model::model_preset("gpt-10m");
  const RunShape run = four_ranks(3);
  const ProcessPrediction p = predict_process(gpt, run, {0, 4}, 50'000'000);
  ASSERT_EQ(p.ranks.size(), 4u);
  // The ranks pass their peaks together (a step), so the process needs
  // their sum; never more than each rank's own worst case summed.
  uint64_t sum = 0, steps = 0;
  for (int r = 0; r < 4; ++r) {
    const RankPrediction q = predict_rank(gpt, run, r);
    sum += q.resident();
    steps += q.step(q.buckets_bound) + q.allocator;
  }
  EXPECT_LE(p.ranks_total(), sum);
  EXPECT_GE(p.ranks_total(), steps);
  EXPECT_EQ(p.total(), p.ranks_total() + 50'000'000);
  EXPECT_NO_THROW(check_memory_fits(gpt, run, {0, 4}, 50'000'000, p.total()));
  try {
    check_memory_fits(gpt, four_ranks(0), {0, 4}, 50'000'000, p.total(), "this machine's memory");
    FAIL() << "stage 0 should not fit where stage 3 just does";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in this process (4 ranks, the busiest"), std::string::npos) << what;
    EXPECT_NE(what.find("over this machine's memory"), std::string::npos) << what;
    EXPECT_NE(what.find("stage 3 would fit"), std::string::npos) << what;
  }
  // The consolidated copy for the sample is rank 0's: 4 bytes per parameter.
  RunShape sample = run;
  sample.consolidated_copy = true;
  EXPECT_EQ(predict_rank(gpt, sample, 0).final_scratch,
            4 * model::num_params(gpt) + unit_schedule(gpt).largest_unit() * run.dtype.size());
  EXPECT_EQ(predict_rank(gpt, sample, 1).final_scratch, unit_schedule(gpt).largest_unit() * run.dtype.size());
  // A resume reads through one buffer while the workspace exists: a large
  // enough one is the rank's peak moment.
  RunShape resume = run;
  resume.load_scratch = uint64_t{1} << 30;
  const RankPrediction r = predict_rank(gpt, resume, 0);
  EXPECT_EQ(r.total(), r.model_states() + r.compute_copy + r.activations + r.comm + (uint64_t{1} << 30));
  EXPECT_GT(predict_process(gpt, resume, {0, 4}, 0).total(), p.total() - 50'000'000 + 3 * (uint64_t{1} << 30));
}

TEST(Predict, OptimizerKindsAndBadInput) {
  // The plan reads train's optimizer config itself; it names it by its states.
  optim::OptimizerConfig o;
  EXPECT_EQ(optimizer_name(o), "adamw");
  o.kind = optim::OptimizerKind::kSgd;
  EXPECT_EQ(optimizer_name(o), "sgd");
  o.sgd.momentum = 0.9;
  EXPECT_EQ(optimizer_name(o), "sgd-momentum");
  o.kind = optim::OptimizerKind::kLion;
  EXPECT_EQ(optimizer_name(o), "lion");
  RunShape run = four_ranks(0);
  run.checkpointing = true;
  EXPECT_THROW(predict_rank(model::model_preset("mlp-small"), run), ConfigError);
  run = four_ranks(0);
  run.seq_len = 100000;
  EXPECT_THROW(predict_rank(model::model_preset("gpt-tiny"), run), ConfigError);
}

}  // namespace
}  // namespace zerodp::plan
