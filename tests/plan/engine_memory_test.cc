// SPDX-License-Identifier: Apache-2.0
// The engine memory model by hand, on schedules small enough to count.
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/engine_memory.h"

namespace zerodp::plan {
namespace {

// Units of 10, 7 and 4 elements; ops 0, 1, 2, then unit 0 again (tied, as
// the GPT's LM head).
UnitSchedule tied() { return UnitSchedule{{10, 7, 4}, {0, 1, 2, 0}}; }

TEST(EngineMemory, OwnedElementsFollowTheUnevenShardRule) {
  const std::vector<uint64_t> counts = {10, 7, 4};
  EXPECT_EQ(owned_elements(counts, 1, 0), 21u);
  // N = 3: 10 -> 4,3,3; 7 -> 3,2,2; 4 -> 2,1,1.
  EXPECT_EQ(owned_elements(counts, 3, 0), 9u);
  EXPECT_EQ(owned_elements(counts, 3, 1), 6u);
  EXPECT_EQ(owned_elements(counts, 3, 2), 6u);
  EXPECT_THROW(owned_elements(counts, 3, 3), ConfigError);
}

TEST(EngineMemory, ModelStatesPerStage) {
  EngineRun run{
      .stage = Stage::k0, .ranks = 3, .dtype = Dtype::bf16(), .optimizer = {.kind = optim::OptimizerKind::kAdamW}};
  RankPrediction p = predict_engine_rank(tied(), run, 1, 0);
  EXPECT_EQ(p.params, 21u * 2);
  EXPECT_EQ(p.grads, 21u * 2);
  EXPECT_EQ(p.master + p.adam_m + p.adam_v, 21u * 12);
  run.stage = Stage::k1;
  p = predict_engine_rank(tied(), run, 1, 0);
  EXPECT_EQ(p.grads, 21u * 2);
  EXPECT_EQ(p.master, 6u * 4);
  run.grad_accum = 2;  // owned accumulator + flat staging
  p = predict_engine_rank(tied(), run, 1, 0);
  EXPECT_EQ(p.grads, 6u * 2 + 21u * 2);
  run.stage = Stage::k2;
  p = predict_engine_rank(tied(), run, 1, 0);
  EXPECT_EQ(p.params, 21u * 2);
  EXPECT_EQ(p.grads, 6u * 2);
  run.stage = Stage::k3;
  run.dtype = Dtype::fp32();
  run.optimizer = {.kind = optim::OptimizerKind::kSgd};
  p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.params, 9u * 4);
  EXPECT_EQ(p.master + p.adam_m + p.adam_v, 0u);
}

TEST(EngineMemory, UnitBuffers) {
  EngineRun run{.stage = Stage::k2, .ranks = 2, .dtype = Dtype::bf16()};
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).gathered, 10u * 4);  // fp32 compute copy
  run.stage = Stage::k3;
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).gathered, 10u * 4 + 2 * 10u * 2);
  run.prefetch = false;
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).gathered, 10u * 4 + 10u * 2);
  run.dtype = Dtype::fp32();
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).gathered, 10u * 4);
}

TEST(EngineMemory, BucketsFollowTheBackwardSchedule) {
  // Backward: op 3 opens unit 0 (40 B fp32), op 2 unit 2 (16 B), op 1 unit 1
  // (28 B), op 0 closes unit 0. The engine's pool keeps each buffer by its
  // size, so the category holds, per size, the most out at once: fp32 stage
  // 2 has one gradient of each unit's size.
  EngineRun run{.stage = Stage::k2, .ranks = 2, .dtype = Dtype::fp32()};
  RankPrediction p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.buckets, 40u + 16u + 28u);
  // A lagging comm thread keeps unit 2 (16) and unit 1 (28) queued while
  // unit 0 is open: still one of each size.
  EXPECT_EQ(p.buckets_bound, 40u + 16u + 28u);
  // bf16: each reduction's 2-byte copy (8, 14, 20) is taken beside the fp32
  // gradient. Unit 2's fp32 gradient (4 el.) lives in the compute copy (10
  // el.) after its weights; unit 1's (7) does not fit beside its own, nor
  // unit 0's beside every unit op 3..0 reads (core/grad_schedule.h).
  run.dtype = Dtype::bf16();
  p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.buckets, 40u + 28u + 8u + 14u + 20u);
  // Stage 1 converts into its grads buffer: no copy.
  run.stage = Stage::k1;
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).buckets, 40u + 28u);
}

TEST(EngineMemory, ADeferredWeightPartOpensTheTiedGradientAtTheEnd) {
  // The tied head (op 3) runs its weight part at op 0, whose backward
  // reads no weights (as GPT's embedding): unit 0's gradient opens there,
  // so at bf16 it takes the whole compute copy; unit 2's sits after its
  // weights; unit 1's is pooled.
  UnitSchedule s = tied();
  s.op_backward_reads = {false, true, true, true};
  s.op_weight_grad_apart = {false, false, false, true};
  EngineRun run{.stage = Stage::k1, .ranks = 2, .dtype = Dtype::bf16()};
  EXPECT_EQ(predict_engine_rank(s, run, 0, 0).buckets, 28u);
  run.stage = Stage::k2;  // and the three bf16 copies
  EXPECT_EQ(predict_engine_rank(s, run, 0, 0).buckets, 28u + 8u + 14u + 20u);
  // fp32 has no compute copy: every gradient pooled, one of each size.
  run.dtype = Dtype::fp32();
  EXPECT_EQ(predict_engine_rank(s, run, 0, 0).buckets, 40u + 16u + 28u);
  // Where op 0's backward reads weights, unit 0's gradient does not fit
  // beside them.
  run.dtype = Dtype::bf16();
  s.op_backward_reads = {true, true, true, true};
  EXPECT_EQ(predict_engine_rank(s, run, 0, 0).buckets, 40u + 28u + 8u + 14u + 20u);
}

TEST(EngineMemory, StageZeroPacksAdjacentUnitsIntoBuckets) {
  // bf16, buckets of 12 elements (24 B). A step's first micro-batch rounds
  // each unit's gradient straight into the bf16 gradient buffer and
  // all-reduces ranges of it in place: the pool holds only the fp32
  // gradients that do not live in the compute copy (40, 28; unit 2's does).
  EngineRun run{.stage = Stage::k0, .ranks = 2, .dtype = Dtype::bf16(), .bucket_elements = 12};
  RankPrediction p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.buckets, 40u + 28u);
  EXPECT_EQ(p.buckets_bound, 40u + 28u);
  // The second micro-batch packs buckets: unit 2 (4 el., flat 17..20) opens
  // one; unit 1 (7 el., flat 10..16) is adjacent and fits (11); unit 0 (10)
  // does not: flush, open another of 20 B (it needs only the 10 elements
  // below its end).
  run.grad_accum = 2;
  p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.buckets, 40u + 28u + 24u + 20u);
  EXPECT_EQ(p.buckets_bound, 40u + 28u + 24u + 20u);
  // Lagging over 3 micro-batches: the second pass's two buckets still
  // queued when the third takes its own, so two of each bucket size.
  run.grad_accum = 3;
  p = predict_engine_rank(tied(), run, 0, 0);
  EXPECT_EQ(p.buckets, 40u + 28u + 24u + 20u);
  EXPECT_EQ(p.buckets_bound, 40u + 28u + 2 * 24u + 2 * 20u);
  // A bucket is never smaller than the unit it must hold: one per unit (8,
  // 14, 20 B).
  run.grad_accum = 2;
  run.bucket_elements = 1;
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).buckets, 40u + 28u + 8u + 14u + 20u);
  // fp32 with accumulation, buckets of 12 (48 B): unit 0's bucket would
  // hold unit 0 alone, so its gradient is all-reduced as it is: no second
  // 40-byte buffer.
  run.dtype = Dtype::fp32();
  run.bucket_elements = 12;
  run.grad_accum = 2;
  EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).buckets, 40u + 16u + 28u + 48u);
  // fp32, one micro-batch per step: the backward writes into the gradient
  // buffer and the all-reduce runs in place there, so nothing is pooled (at
  // stage 1 too: it reduce-scatters from that buffer).
  run.grad_accum = 1;
  for (const Stage stage : {Stage::k0, Stage::k1}) {
    run.stage = stage;
    EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).buckets, 0u) << stage_number(stage);
    EXPECT_EQ(predict_engine_rank(tied(), run, 0, 0).buckets_bound, 0u) << stage_number(stage);
  }
}

TEST(EngineMemory, TotalsAndBadInput) {
  EngineRun run{.stage = Stage::k3, .ranks = 4, .dtype = Dtype::bf16()};
  const RankPrediction p = predict_engine_rank(tied(), run, 0, 1000);
  EXPECT_EQ(p.total(), p.model_states() + p.gathered + p.buckets + p.comm + 1000);  // comm: the norm's scratch
  EXPECT_GE(p.total_bound(), p.total());
  run.ranks = 0;  // a stage past 3 cannot be written any more: parse_stage refuses it (core/stage_test.cc)
  EXPECT_THROW(predict_engine_rank(tied(), run, 0, 0), ConfigError);
  run.ranks = 4;
  run.stage = Stage::k0;
  run.grad_accum = 0;
  EXPECT_THROW(predict_engine_rank(tied(), run, 0, 0), ConfigError);
  EXPECT_THROW(predict_engine_rank(UnitSchedule{{3}, {1}}, EngineRun{}, 0, 0), ConfigError);
}

}  // namespace
}  // namespace zerodp::plan
