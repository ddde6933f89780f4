// SPDX-License-Identifier: Apache-2.0
// The backward's gradient schedule in the engine (core/grad_schedule.h): the
// tied LM head's weight gradient run at the embedding's backward, and the
// fp32 gradients that live in the compute copy, give the bits of a model
// whose head runs whole (every gradient pooled), at every stage, both
// mixed precisions and both compute paths; and with mixed precision they
// pool less.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "comm/world.h"
#include "kernels/compute.h"
#include "model/gpt.h"
#include "zero/engine.h"
#include "zero/model_view.h"
#include "zero/pipeline_test_util.h"

namespace zerodp::zero {
namespace {

using testing::expect_same_bits;
using testing::ModelView;
using testing::Trained;

// Global micro-batch g of a step: tokens from a few ids, so the embedding's
// backward adds several rows into one and the order of the tied gradient's
// contributions shows in its bits.
void feed_repeating(model::Workspace& ws, int64_t step, int64_t g) {
  std::vector<int32_t> tokens(testing::kPipeBatch * testing::kPipeSeq), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((step * 3 + g * 5 + static_cast<int64_t>(i * i)) % 7);
    targets[i] = static_cast<int32_t>((step * 11 + g + static_cast<int64_t>(i) * 13) % testing::kPipeVocab);
  }
  ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
}

struct TrainedRun {
  Trained trained;
  uint64_t buckets_peak = 0;
  uint64_t gathered_peak = 0;
};

TrainedRun train(const model::Model& m, Stage stage, Dtype dtype, kernels::Compute compute) {
  EngineConfig c;
  c.stage = stage;
  c.dtype = dtype;
  c.compute = compute;
  c.grad_accum = 2;
  c.clip_norm = 0.5;
  c.bucket_elements = 3000;
  // Reductions inline: the pool's peak is then the plan's (no comm thread
  // lagging by chance), so the two runs' buckets compare exactly.
  c.overlap = false;
  c.lr_schedule.max_lr = 1e-2;
  c.loss_scaler.initial_scale = 256.0;
  TrainedRun run;
  comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
    Engine engine(m, comm, c, /*seed=*/5, testing::kPipeBatch, testing::kPipeSeq);
    Trained mine;
    for (int64_t step = 0; step < 3; ++step) {
      const StepResult r = engine.train_step(
          [&](model::Workspace& ws, int micro) { feed_repeating(ws, step, int64_t{micro} * 2 + comm.rank()); });
      mine.losses.push_back(r.loss);
      mine.norms.push_back(r.grad_norm);
    }
    mine.master = engine.gather_master_params();
    const uint64_t buckets = engine.ledger().peak(MemoryCategory::kBuckets);
    const uint64_t gathered = engine.ledger().peak(MemoryCategory::kGathered);
    if (comm.rank() == 0) run = {mine, buckets, gathered};
  });
  return run;
}

TEST(EngineGradSchedule, TheHeadsLateWeightGradientKeepsTheBits) {
  const model::Gpt gpt(testing::small_pipeline_gpt());
  // The same model with no op split: the engine opens the tied gradient at
  // the head and keeps it through the whole backward.
  const ModelView whole(gpt, {.split_head = false});
  for (const Dtype dtype : {Dtype::bf16(), Dtype::fp16(), Dtype::fp32()}) {
    for (const auto compute : {kernels::Compute::kFp32, kernels::Compute::kBf16}) {
      for (const Stage stage : {Stage::k0, Stage::k1, Stage::k2, Stage::k3}) {
        const std::string what =
            fmt::format("{} compute {} ZeRO {}", dtype.name(), kernels::compute_name(compute), stage_number(stage));
        const TrainedRun split = train(gpt, stage, dtype, compute);
        const TrainedRun unsplit = train(whole, stage, dtype, compute);
        expect_same_bits(split.trained, unsplit.trained, what);
        if (dtype.is_low_precision()) {
          // The tied embedding's fp32 gradient and every block's live in
          // the compute copy: nothing of theirs is pooled.
          EXPECT_LT(split.buckets_peak, unsplit.buckets_peak) << what;
        } else {
          // fp32 pools every gradient, one of each size either way.
          EXPECT_EQ(split.buckets_peak, unsplit.buckets_peak) << what;
        }
      }
    }
  }
}

// bf16 units read in place by the ops (Model::reads_bf16_weights: the
// products read bf16 weights, the few gains and biases are widened into the
// compute copy's first floats) give the bits of the units converted into
// the compute copy, at every stage. The copy then holds a block's gradient
// after its widened values, and the tied embedding's gradient is made there
// a few rows at a time, so it shrinks from the largest unit to a block;
// nothing more is pooled.
TEST(EngineGradSchedule, Bf16WeightsReadInPlaceKeepTheBitsAndTheMemory) {
  const model::Gpt gpt(testing::small_pipeline_gpt());
  const ModelView converted(gpt, {.bf16_in_place = false});
  for (const Stage stage : {Stage::k0, Stage::k1, Stage::k2, Stage::k3}) {
    const std::string what = fmt::format("ZeRO {}", stage_number(stage));
    const TrainedRun in_place = train(gpt, stage, Dtype::bf16(), kernels::Compute::kBf16);
    const TrainedRun copied = train(converted, stage, Dtype::bf16(), kernels::Compute::kBf16);
    expect_same_bits(in_place.trained, copied.trained, what);
    EXPECT_EQ(in_place.buckets_peak, copied.buckets_peak) << what;
    // The copy: a block and its 13 C widened values, not the embedding unit.
    const uint64_t block = gpt.units()[1].count + 13 * static_cast<uint64_t>(gpt.gpt_config().channels);
    ASSERT_GT(gpt.units()[0].count, block);
    EXPECT_EQ(copied.gathered_peak - in_place.gathered_peak, 4 * (gpt.units()[0].count - block)) << what;
  }
}

}  // namespace
}  // namespace zerodp::zero
