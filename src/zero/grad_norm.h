// SPDX-License-Identifier: Apache-2.0
// The reduced gradient's sum of squares (the global norm's square, for
// clipping), the same bits at every rank count and stage.
//
// A sum over each rank's shard, added in rank order, depends on where N's
// shards cut the units. Instead each unit is cut into fixed blocks of
// kNormBlock elements from its start; a block's squares are summed in one
// call over the whole block (optim::sum_of_squares on its fp32 values), by
// the rank whose shard holds the block's first element, which receives the
// rest from the ranks after it (one all-gather of each rank's first partial
// block per unit: at most kNormBlock - 1 elements). The block sums are then
// added exactly, as integers: each is rounded once to a fixed point 2^-K of
// the largest block sum (K = 90 bits below it: blocks of 2^-90 of the
// largest vanish), summed in 128 bits on each rank and over ranks (one
// all-gather of 16 bytes), and scaled back. Integer addition has no order, so
// the result depends only on the gradient's values and kNormBlock.
// Cost per step: two passes over the rank's gradient shard, one all-gather
// of units x (kNormBlock - 1) floats per rank, one scalar max and one 16-byte
// all-gather (small collectives: the Φ traffic counters do not count them).
// Thread-safety: one call per rank thread; collective over `shard_comm`.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "optim/grad_utils.h"
#include "zero/partition_plan.h"
#include "zero/state_buffer.h"

namespace zerodp::zero {

using optim::kNormBlock;

// A pipeline's stages (zero/pipeline.h): the sum crosses `across` (one rank
// per stage: the largest block and the integer sums are its ranks' too),
// and units another stage counts (`skipped`, per unit; empty: none) add
// nothing here.
struct NormReach {
  comm::Communicator* across = nullptr;
  std::vector<bool> skipped = {};
};

// REQUIRES every element of `grads` finite (the caller's overflow check) and
// scratch.size() >= optim::norm_scratch_floats(units, shard_comm.size()),
// which the engine books (ledger: comm) and the planner predicts.
double canonical_sum_of_squares(const PartitionPlan& plan, const StateBuffer& grads, comm::Communicator& shard_comm,
                                std::span<float> scratch, const NormReach& reach = {});

}  // namespace zerodp::zero
