// SPDX-License-Identifier: Apache-2.0
// Inf in the gradients of ONE rank only (its micro-batch holds an Inf
// feature at one step): under fp16 every rank skips that step together (the
// overflow flag is all-reduced, so the loss scalers stay identical and the
// ranks stay in lock-step); under fp32 and bf16 every rank stops with an
// error naming the step.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "comm/world.h"
#include "core/error.h"
#include "zero/engine_test_util.h"

namespace zerodp::zero::nonfinite_grad {
namespace {

constexpr int kRanks = 3;
constexpr int kPoisonedRank = 2;
constexpr int64_t kPoisonedStep = 1;  // 0-based: the second step
constexpr int kSteps = 4;

// The usual feeder, but rank kPoisonedRank's first sample at kPoisonedStep
// has an Inf feature, which makes its local gradients non-finite.
BatchFeeder poisoned_feeder(const int64_t& step, int rank, int b) {
  return testing::mlp_feeder(step, rank, b, [rank](testing::Sample& s, int64_t at, int index) {
    if (rank == kPoisonedRank && at == kPoisonedStep && index == 0) s.x[3] = std::numeric_limits<float>::infinity();
  });
}

struct RankRecord {
  std::vector<bool> skipped;
  std::vector<double> scales;
  optim::LossScalerState scaler;
  int64_t steps = 0;
  std::vector<float> master;
  std::string error;
};

std::vector<RankRecord> train(int stage, Dtype dtype, comm::Quantization grads = comm::Quantization::kNone,
                              comm::Quantization weights = comm::Quantization::kNone) {
  const model::Mlp mlp(testing::small_mlp());
  EngineConfig config;
  config.stage = parse_stage(stage, "test");
  config.dtype = dtype;
  config.quantize_grads = grads;
  config.quantize_weights = weights;
  std::vector<RankRecord> records(kRanks);
  try {
    comm::run_thread_ranks(kRanks, {.timeout = std::chrono::seconds(20)}, [&](comm::Communicator& c) {
      RankRecord& rec = records[c.rank()];
      try {
        Engine engine(mlp, c, config, /*seed=*/11, /*micro_batch=*/2, 1);
        int64_t step = 0;
        const BatchFeeder feed = poisoned_feeder(step, c.rank(), 2);
        for (step = 0; step < kSteps; ++step) {
          const StepResult r = engine.train_step(feed);
          rec.skipped.push_back(r.skipped);
          rec.scales.push_back(engine.loss_scale());
        }
        rec.scaler = engine.counters().scaler;
        rec.steps = engine.steps_taken();
        rec.master = engine.gather_master_params();
      } catch (const Error& e) {
        rec.error = e.message();
        throw;
      }
    });
  } catch (const Error&) {
    // Recorded per rank above.
  }
  return records;
}

class NonfiniteGrad : public ::testing::TestWithParam<int> {};

void expect_every_rank_skips(const std::vector<RankRecord>& recs) {
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankRecord& rec = recs[r];
    ASSERT_EQ(rec.error, "");
    ASSERT_EQ(rec.skipped.size(), static_cast<size_t>(kSteps));
    for (int s = 0; s < kSteps; ++s) EXPECT_EQ(rec.skipped[s], s == kPoisonedStep) << "step " << s;
    EXPECT_EQ(rec.steps, kSteps - 1);  // the skipped step is not taken
    EXPECT_EQ(rec.scaler.total_overflows, 1);
    // Identical scaler state and parameters on every rank.
    EXPECT_EQ(rec.scaler, recs[0].scaler);
    EXPECT_EQ(rec.scales, recs[0].scales);
    ASSERT_EQ(rec.master.size(), recs[0].master.size());
    for (size_t i = 0; i < rec.master.size(); ++i) {
      ASSERT_TRUE(std::isfinite(rec.master[i])) << i;
      ASSERT_EQ(rec.master[i], recs[0].master[i]) << i;
    }
  }
}

TEST_P(NonfiniteGrad, Fp16EveryRankSkipsTheStep) { expect_every_rank_skips(train(GetParam(), Dtype::fp16())); }

// Compressed gradients (--quantize-grads): the Inf makes its block's scale
// NaN, so the reduced block is NaN on the rank that owns it, and the
// overflow check still sees it.
TEST_P(NonfiniteGrad, QuantizedGradientsKeepTheOverflow) {
  const int stage = GetParam();
  if (stage == 0) {  // stage 0 all-reduces its gradients: refused, not ignored
    const std::vector<RankRecord> recs = train(stage, Dtype::fp16(), comm::Quantization::kInt8);
    EXPECT_NE(recs[0].error.find("quantize_grads needs stage 1, 2 or 3"), std::string::npos) << recs[0].error;
    return;
  }
  for (comm::Quantization q : {comm::Quantization::kInt8, comm::Quantization::kInt4}) {
    SCOPED_TRACE(std::string(comm::quantization_name(q)));
    expect_every_rank_skips(
        train(stage, Dtype::fp16(), q, stage == 3 ? comm::Quantization::kInt8 : comm::Quantization::kNone));
    const std::vector<RankRecord> recs = train(stage, Dtype::bf16(), q);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_NE(recs[r].error.find("non-finite gradient at step 2"), std::string::npos) << recs[r].error;
    }
  }
}

TEST_P(NonfiniteGrad, Fp32AndBf16StopNamingTheStep) {
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    const std::vector<RankRecord> recs = train(GetParam(), dtype);
    for (int r = 0; r < kRanks; ++r) {
      SCOPED_TRACE(std::string(dtype.name()) + " rank " + std::to_string(r));
      // Every rank sees the all-reduced flag and stops at the same step with
      // the same message, before updating anything at that step.
      EXPECT_NE(recs[r].error.find("non-finite gradient at step 2"), std::string::npos) << recs[r].error;
      EXPECT_EQ(recs[r].skipped.size(), static_cast<size_t>(kPoisonedStep));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, NonfiniteGrad, ::testing::Values(0, 1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace zerodp::zero::nonfinite_grad
