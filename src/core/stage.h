// SPDX-License-Identifier: Apache-2.0
// The ZeRO stage and the one table of what each stage does (Rajbhandari et
// al., SC20, arXiv 1910.02054). The engine (src/zero), the planner
// (src/plan) and the run summary (src/train) read the table instead of
// comparing stage numbers, so "what stage S keeps and sends" is said once:
//
// | stage | partitions (params grads optimizer) | reduce         | refresh    | gather on acquire |
// |   0   |  -       -       -                  | all-reduce     | local      | no                |
// |   1   |  -       -       yes                | reduce-scatter | all-gather | no                |
// |   2   |  -       yes     yes                | reduce-scatter | all-gather | no                |
// |   3   |  yes     yes     yes                | reduce-scatter | local      | yes               |
//
// A stage is a number only at the edges: --stage, zero_optimization.stage,
// a checkpoint manifest, the metrics file and printed text spell it 0..3
// (parse_stage, stage_number; fmt prints a Stage as its number).
// It lives in core because zero, plan and train all read it and plan may
// not include zero. Thread-safety: constants and pure functions.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zerodp {

enum class Stage : uint8_t { k0 = 0, k1 = 1, k2 = 2, k3 = 3 };

// How a micro-batch's gradients are reduced across ranks.
enum class GradReduce : uint8_t {
  kAllReduce,      // every rank gets the whole sum (2Φ on the wire)
  kReduceScatter,  // each rank gets the sum of its own shard (Φ)
};

// How the parameters follow the optimizer's update.
enum class ParamRefresh : uint8_t {
  kLocal,      // each rank converts what it updated, and that is all it holds (no collective)
  kAllGather,  // each rank converts its own shard, then an all-gather rebuilds the full parameters (Φ)
};

struct StageTraits {
  Stage stage;
  std::string_view paper_name;  // "plain data parallel", "P_os", "P_os+g", "P_os+g+p"
  // Which model states a rank holds only its own shard of (else all of them).
  bool partitions_params;
  bool partitions_grads;
  bool partitions_optimizer;  // fp32 master weights and moments: the elements a rank updates
  GradReduce reduce;
  ParamRefresh refresh;
  bool gathers_on_acquire;  // a unit's parameters are all-gathered before each op that uses it
};

inline constexpr std::array<StageTraits, 4> kStageTable = {{
    {Stage::k0, "plain data parallel", false, false, false, GradReduce::kAllReduce, ParamRefresh::kLocal, false},
    {Stage::k1, "P_os", false, false, true, GradReduce::kReduceScatter, ParamRefresh::kAllGather, false},
    {Stage::k2, "P_os+g", false, true, true, GradReduce::kReduceScatter, ParamRefresh::kAllGather, false},
    {Stage::k3, "P_os+g+p", true, true, true, GradReduce::kReduceScatter, ParamRefresh::kLocal, true},
}};

inline constexpr std::array<Stage, 4> kAllStages = {Stage::k0, Stage::k1, Stage::k2, Stage::k3};

constexpr int stage_number(Stage stage) { return static_cast<int>(stage); }

constexpr const StageTraits& traits(Stage stage) { return kStageTable[static_cast<size_t>(stage)]; }

// Stage 1 keeps the whole local gradient (it is not partitioned) but reduces
// it with a reduce-scatter, so with accumulation (grad_accum > 1) the reduced
// shards need an owned accumulator of their own beside it
// (docs/architecture.md: gradients are reduced every micro-batch).
constexpr bool keeps_owned_accumulator(Stage stage, int grad_accum) {
  const StageTraits& t = traits(stage);
  return grad_accum > 1 && !t.partitions_grads && t.reduce == GradReduce::kReduceScatter;
}

// Where the backward writes a unit's gradient. At fp32 with one micro-batch
// per step, stages 0 and 1 hold the whole local gradient in the very form
// the backward produces, and the reduction runs in place on it (stage 0's
// bucket is a range of it, stage 1 reduce-scatters from it into its own
// shard), so the backward accumulates straight into the gradient buffer:
// no per-unit scratch, no bucket, no copy (the "buckets" category holds
// nothing). Elsewhere it writes into a pooled fp32 scratch first: low
// precision rounds from it, accumulation adds the reduced sum to earlier
// micro-batches', and stages 2-3 keep only a shard.
constexpr bool backward_writes_grads(Stage stage, bool low_precision, int grad_accum) {
  return !low_precision && grad_accum == 1 && !traits(stage).partitions_grads;
}

// The engine sums a step's micro-batches in the pairwise order of
// comm/reduce.h (so the sum is the same tree whatever N: zero/engine.h).
// Besides the accumulator, that order holds partial sums waiting for their
// sibling: this many, each the accumulator's size. It is the most set bits
// of an even micro-batch index t < grad_accum - 1 (0 up to 3 micro-batches,
// 1 for 4-7, 2 for 8-15, ...; the last micro-batch folds in directly).
constexpr int pairwise_partials(int grad_accum) {
  int most = 0;
  for (int t = 2; t < grad_accum - 1; t += 2) most = std::max(most, std::popcount(static_cast<unsigned>(t)));
  return most;
}

// Gradient elements beyond the formula's pΦ (stage 0-1) or pΦ/N (2-3) that
// a rank holding `owned` of Φ elements keeps: stage 1's owned accumulator,
// and the pairwise sum's partials, each the accumulator's size (the owned
// shard where gradients are partitioned or stage 1 accumulates, else Φ).
constexpr uint64_t extra_grad_elements(Stage stage, int grad_accum, uint64_t owned, uint64_t phi) {
  const bool owned_accumulator = keeps_owned_accumulator(stage, grad_accum);
  const uint64_t accumulator = traits(stage).partitions_grads || owned_accumulator ? owned : phi;
  return (owned_accumulator ? owned : 0) + static_cast<uint64_t>(pairwise_partials(grad_accum)) * accumulator;
}

// Full-model collectives per step with `grad_accum` micro-batches, each a
// volume of Φ elements: an all-reduce counts 2 (a reduce-scatter and an
// all-gather), a reduce-scatter 1, per micro-batch; an all-gather refresh 1
// per step; gathering on acquire 2 per micro-batch (forward and backward).
// With grad_accum 1 this is the paper's 2Φ (stages 0-2) or 3Φ (stage 3).
constexpr int collectives_per_step(Stage stage, int grad_accum) {
  const StageTraits& t = traits(stage);
  int n = (t.reduce == GradReduce::kAllReduce ? 2 : 1) * grad_accum;
  if (t.refresh == ParamRefresh::kAllGather) n += 1;
  if (t.gathers_on_acquire) n += 2 * grad_accum;
  return n;
}

static_assert([] {
  for (size_t i = 0; i < kStageTable.size(); ++i) {
    if (static_cast<size_t>(kStageTable[i].stage) != i || kAllStages[i] != kStageTable[i].stage) return false;
  }
  return true;
}());

// The stage numbered `number`. ConfigError otherwise, naming where the number
// came from (`what`: e.g. "[train] --stage"):
//   "{what} {number}: ZeRO stage {number} does not exist; use 0, 1, 2 or 3"
Stage parse_stage(int64_t number, std::string_view what);

}  // namespace zerodp

// fmt prints a Stage as its number, with int's format specs.
template <>
struct fmt::formatter<zerodp::Stage> : fmt::formatter<int> {
  template <typename FormatContext>
  auto format(zerodp::Stage stage, FormatContext& ctx) const {
    return fmt::formatter<int>::format(zerodp::stage_number(stage), ctx);
  }
};
