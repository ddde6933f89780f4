// SPDX-License-Identifier: Apache-2.0
// core/grad_schedule.h by hand: which weight parts wait, when each unit's
// gradient opens and closes, and which gradients live in the compute copy.
#include "core/grad_schedule.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace zerodp {
namespace {

constexpr uint64_t kPooled = GradSchedule::kPooled;

// A GPT's shape: unit 0 the embedding (100 el.), units 1-2 blocks (20),
// unit 3 the final norm (4); ops embedding, two blocks, norm, tied head.
GradOps gpt_like(bool head_apart) {
  return {.counts = {100, 20, 20, 4},
          .units = {0, 1, 2, 3, 0},
          .backward_reads = {false, true, true, true, true},
          .weight_grad_apart = {false, false, false, false, head_apart}};
}

TEST(GradSchedule, TheTiedHeadsWeightPartWaitsForTheEmbedding) {
  const GradSchedule s = grad_schedule(gpt_like(true), 100);
  EXPECT_EQ(s.deferred, (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(s.opens_at, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.closes_at, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.waiting, (std::vector<std::vector<int>>{{4}, {}, {}, {}}));
  // Each gradient after the weights its own op converts; the embedding's
  // where no op of its lifetime reads weights: the whole copy.
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{0, 20, 20, 4}));
}

TEST(GradSchedule, UnsplitTheTiedGradientIsOpenThroughTheBackward) {
  const GradSchedule s = grad_schedule(gpt_like(false), 100);
  EXPECT_EQ(s.deferred, (std::vector<bool>(5, false)));
  EXPECT_EQ(s.opens_at, (std::vector<int>{4, 1, 2, 3}));
  // Unit 0's lifetime (ops 4..0) converts the whole copy: pooled; the
  // others still fit after their weights, one at a time, while it is open.
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{kPooled, 20, 20, 4}));
}

TEST(GradSchedule, WithoutACopyEveryGradientIsPooled) {
  const GradSchedule s = grad_schedule(gpt_like(true), 0);
  EXPECT_EQ(s.deferred, (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>(4, kPooled)));
  // A copy too small for a block and its gradient: only the norm's fits.
  EXPECT_EQ(grad_schedule(gpt_like(true), 39).in_compute_copy, (std::vector<uint64_t>{kPooled, kPooled, kPooled, 4}));
}

TEST(GradSchedule, OneGradientInTheCopyAtATime) {
  // Unit 0 is open from op 2 to op 0, across unit 1's op: unit 1's gradient
  // (which would fit after its weights) is pooled.
  const GradOps ops{.counts = {2, 3},
                    .units = {0, 1, 0},
                    .backward_reads = {true, true, true},
                    .weight_grad_apart = {false, false, false}};
  const GradSchedule s = grad_schedule(ops, 10);
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{3, kPooled}));
}

TEST(GradSchedule, AWeightPartRunsAtOnceWhereItsGradientIsOpen) {
  // Op 2 opens unit 0 (not split); op 1 is split but its unit is open: it
  // runs whole, so its contribution keeps its place in the sum.
  const GradOps ops{.counts = {5},
                    .units = {0, 0, 0},
                    .backward_reads = {true, true, true},
                    .weight_grad_apart = {false, true, false}};
  const GradSchedule s = grad_schedule(ops, 5);
  EXPECT_EQ(s.deferred, (std::vector<bool>(3, false)));
  EXPECT_EQ(s.opens_at, (std::vector<int>{2}));
  EXPECT_EQ(s.closes_at, (std::vector<int>{0}));
}

// bf16 units read in place: the ops widen a few values into the copy (the
// blocks 5, the norm 2), and the tied embedding (10 rows of 10) can be made
// in rows, its embedding's backward being all weight part.
GradOps gpt_in_place() {
  GradOps ops = gpt_like(true);
  ops.weight_grad_apart.front() = true;
  ops.copied = {0, 5, 5, 2, 0};
  ops.grad_rows = {10, 0, 0, 0};
  return ops;
}

TEST(GradSchedule, InPlaceTheCopyHoldsABlocksGradientAndTheEmbeddingsRows) {
  const GradOps ops = gpt_in_place();
  // A block's gradient after its 5 widened values; a row of the embedding.
  EXPECT_EQ(compute_copy_elements(ops), 25u);
  const GradSchedule s = grad_schedule(ops, 25);
  // The embedding's gradient is made at op 0, 2 rows at a time, from the
  // head's weight part and then the embedding's (the order unsplit adds).
  EXPECT_EQ(s.chunk_rows, (std::vector<uint64_t>{2, 0, 0, 0}));
  EXPECT_EQ(s.waiting, (std::vector<std::vector<int>>{{4, 0}, {}, {}, {}}));
  EXPECT_EQ(s.deferred, (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(s.opens_at, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{0, 5, 5, 2}));
  // A larger copy takes more rows at a time, never more than the unit's.
  EXPECT_EQ(grad_schedule(ops, 39).chunk_rows[0], 3u);
  EXPECT_EQ(grad_schedule(ops, 1000).chunk_rows[0], 10u);
  // Converted units need the largest unit, as before.
  GradOps converted = gpt_like(true);
  EXPECT_EQ(compute_copy_elements(converted), 100u);
  // No copy (fp32): made whole, as the converted schedule makes it.
  const GradSchedule whole = grad_schedule(ops, 0);
  EXPECT_EQ(whole.waiting, (std::vector<std::vector<int>>{{4}, {}, {}, {}}));
  EXPECT_EQ(whole.chunk_rows, (std::vector<uint64_t>(4, 0)));
}

TEST(GradSchedule, RowsNeedEveryOpsWeightPartApart) {
  GradOps ops = gpt_in_place();
  ops.weight_grad_apart.back() = false;  // the head unsplit: made whole, open through the backward
  const GradSchedule s = grad_schedule(ops, compute_copy_elements(ops));
  EXPECT_EQ(s.chunk_rows, (std::vector<uint64_t>(4, 0)));
  EXPECT_EQ(s.opens_at[0], 4);
  // Its whole gradient fits in the copy, after what the blocks of its
  // lifetime widen (which then pool theirs).
  EXPECT_EQ(compute_copy_elements(ops), 105u);
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{5, kPooled, kPooled, kPooled}));
}

TEST(GradSchedule, AGradientOpenAcrossRowsBeingMadeIsPooled) {
  // Unit 1 (3 el., unsplit) is open from op 2 to op 0, across op 1, where
  // unit 0 (2 rows of 4) is made in rows at the copy's start.
  const GradOps ops{.counts = {8, 3},
                    .units = {1, 0, 1},
                    .backward_reads = {true, false, true},
                    .weight_grad_apart = {false, true, false},
                    .copied = {1, 0, 1},
                    .grad_rows = {4, 0}};
  EXPECT_EQ(compute_copy_elements(ops), 4u);
  const GradSchedule s = grad_schedule(ops, 4);
  EXPECT_EQ(s.chunk_rows, (std::vector<uint64_t>{1, 0}));
  EXPECT_EQ(s.in_compute_copy, (std::vector<uint64_t>{0, kPooled}));
  // A copy smaller than a row cannot make it in rows.
  EXPECT_THROW(grad_schedule(ops, 3), Error);
}

TEST(GradSchedule, MismatchedListsAreRefused) {
  GradOps ops = gpt_like(true);
  ops.weight_grad_apart.pop_back();
  EXPECT_THROW(grad_schedule(ops, 100), Error);
  ops = gpt_like(true);
  ops.units[1] = 7;
  EXPECT_THROW(grad_schedule(ops, 100), Error);
  ops = gpt_in_place();
  ops.grad_rows.pop_back();
  EXPECT_THROW(grad_schedule(ops, 100), Error);
}

}  // namespace
}  // namespace zerodp
