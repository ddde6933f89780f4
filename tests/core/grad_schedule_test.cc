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

TEST(GradSchedule, MismatchedListsAreRefused) {
  GradOps ops = gpt_like(true);
  ops.weight_grad_apart.pop_back();
  EXPECT_THROW(grad_schedule(ops, 100), Error);
  ops = gpt_like(true);
  ops.units[1] = 7;
  EXPECT_THROW(grad_schedule(ops, 100), Error);
}

}  // namespace
}  // namespace zerodp
