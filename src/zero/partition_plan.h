// SPDX-License-Identifier: Apache-2.0
// PartitionPlan: which elements of the flat parameter buffer each rank owns.
//
// Every unit is split across all N ranks with comm::shard_range (the first
// count % N ranks hold one element more; no padding), so a rank owns one
// contiguous shard of every unit. A rank's owned buffer (master weights,
// optimizer moments, and at stages 2-3 gradients, at stage 3 parameters) is the
// concatenation of its shards in unit order. The same plan is used at every
// stage — stage 0 simply owns everything for storage but still reduces norms
// over this plan — which is what makes the arithmetic, and so the bits, the
// same at every stage.
// Thread-safety: immutable after construction.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "comm/shard.h"

namespace zerodp::zero {

class PartitionPlan {
 public:
  // unit_counts: the element count of each unit, in flat order (units are
  // contiguous and cover the whole buffer).
  PartitionPlan(std::span<const size_t> unit_counts, int ranks);

  int ranks() const { return ranks_; }
  size_t num_units() const { return unit_offsets_.size(); }
  size_t num_params() const { return num_params_; }
  size_t unit_offset(size_t unit) const { return unit_offsets_[unit]; }
  size_t unit_count(size_t unit) const { return unit_counts_[unit]; }
  size_t largest_unit() const { return largest_unit_; }

  // The rank's shard of a unit, relative to the unit's start.
  comm::ShardRange shard(size_t unit, int rank) const;
  // Where that shard starts in the rank's owned buffer.
  size_t owned_offset(size_t unit, int rank) const { return owned_offsets_[rank][unit]; }
  // Elements the rank owns in all.
  size_t owned_count(int rank) const { return owned_counts_[rank]; }
  // The largest owned_count over ranks (what a rank must budget for).
  size_t max_owned_count() const;

 private:
  int ranks_;
  size_t num_params_ = 0;
  size_t largest_unit_ = 0;
  std::vector<size_t> unit_offsets_;
  std::vector<size_t> unit_counts_;
  std::vector<std::vector<size_t>> owned_offsets_;  // [rank][unit]
  std::vector<size_t> owned_counts_;                // [rank]
};

}  // namespace zerodp::zero
