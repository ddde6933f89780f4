// SPDX-License-Identifier: Apache-2.0
// When the backward opens each unit's fp32 gradient and where that gradient
// lives: shared by the engine (zero/engine.cc), which follows it, and the
// planner (plan/engine_memory.cc), which predicts the memory it takes. It
// lives in core because zero and plan both read it and neither may include
// the other.
//
// The backward runs the ops in reverse. An op whose backward splits into an
// input part and a weight part (model::Op::weight_grad_apart: GPT's and
// Llama's tied LM head) runs its weight part late when a later backward op
// of the same unit follows (the tied embedding's): at the unit's opening
// op, just before that op's own backward, so every contribution is added
// in the same order as unsplit and the bits do not change. The unit's
// gradient then lives from the embedding's backward to its reduction, not
// through the whole backward.
//
// With mixed precision the engine converts each op's unit to fp32 into one
// compute copy of the largest unit. A unit's fp32 gradient goes into that
// copy's buffer instead of the pool where it fits beside what the ops of
// its lifetime convert there: at the offset of the largest unit any of
// those ops reads (0 where none reads weights, as the tied embedding's
// deferred head and the embedding), one unit there at a time. A GPT
// block's gradient sits after its own weights (the embedding unit being at
// least twice a block); the tied embedding's takes the whole buffer at the
// end of the backward, when no op reads weights.
//
// Where the ops read bf16 units in place, only the few values they widen go
// into the copy, and a unit whose gradient can be made in rows (the tied
// embedding, an untied LM head) is made there a few rows at a time: the
// copy then need hold only a block's gradient, not the largest unit.
#pragma once

#include <cstdint>
#include <vector>

namespace zerodp {

// A model's ops for the schedule: each op's unit, the units' element
// counts, whether its backward reads its weights
// (model::Op::backward_reads_params) and whether its weight part can run
// apart (model::Op::weight_grad_apart).
struct GradOps {
  std::vector<uint64_t> counts;  // per unit
  std::vector<int> units;        // per op
  std::vector<bool> backward_reads;
  std::vector<bool> weight_grad_apart;
  // Per op: the elements its backward puts into the compute copy; empty:
  // its unit's count where its backward reads weights (the engine converts
  // the unit there), else 0. A family that reads bf16 units in place puts
  // only the few values it widens there (model::Op::bf16_widened).
  std::vector<uint64_t> copied = {};
  // Per unit (empty: none): the elements of a row where the unit's gradient
  // can be made a few rows at a time (model::UnitInfo::grad_row); 0 where
  // it is made whole. Filled where the engine makes such gradients in rows
  // (bf16 units read in place, model::grad_ops).
  std::vector<uint64_t> grad_rows = {};
};

struct GradSchedule {
  static constexpr uint64_t kPooled = UINT64_MAX;
  // Per op: its weight part waits for its unit's opening op.
  std::vector<bool> deferred;
  // Per unit: the op whose backward opens its gradient (the highest index
  // not deferred), running the unit's deferred weight parts first; and the
  // op after whose backward it is complete (the lowest index using it).
  std::vector<int> opens_at, closes_at;
  // Per unit: the deferred ops whose weight parts its opening op runs first,
  // in backward order (the order an unsplit backward adds them in).
  std::vector<std::vector<int>> waiting;
  // Per unit: its gradient's offset in the compute copy, or kPooled.
  std::vector<uint64_t> in_compute_copy;
  // Per unit: 0 where its fp32 gradient is made whole; else it is made in
  // the compute copy this many rows (GradOps::grad_rows) at a time, at its
  // closing op: there every op of the unit (the closing one last, each
  // having run its input part in turn, `deferred`, listed in `waiting`)
  // adds its weight part to the rows, and the rows go to the unit's
  // reduction before the next ones are made. Its whole fp32 gradient never
  // exists.
  std::vector<uint64_t> chunk_rows;
};

// `compute_copy_elements`: the compute copy's size (the largest unit) with
// mixed precision; 0 where there is none (every gradient pooled, or written
// straight into the gradient buffer, which the caller knows).
GradSchedule grad_schedule(const GradOps& ops, uint64_t compute_copy_elements);

// The compute copy's size with mixed precision: the largest unit, which
// each op's unit is converted into; or where the ops read bf16 units in
// place (GradOps::copied given), the most that must fit there at once: an
// op's widened values, a unit's gradient after what the ops of its
// lifetime widen, and a row of each gradient made in rows.
uint64_t compute_copy_elements(const GradOps& ops);

}  // namespace zerodp
