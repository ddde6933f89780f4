// SPDX-License-Identifier: Apache-2.0
#include "zero/partition_plan.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp::zero {

PartitionPlan::PartitionPlan(std::span<const size_t> unit_counts, int ranks)
    : ranks_(ranks), unit_counts_(unit_counts.begin(), unit_counts.end()) {
  ZDP_CHECK(ranks >= 1, ConfigError, "[partition] ranks must be at least 1, got {}", ranks);
  for (size_t count : unit_counts_) {
    unit_offsets_.push_back(num_params_);
    num_params_ += count;
    largest_unit_ = std::max(largest_unit_, count);
  }
  owned_offsets_.assign(ranks, std::vector<size_t>(unit_counts_.size()));
  owned_counts_.assign(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    for (size_t u = 0; u < unit_counts_.size(); ++u) {
      owned_offsets_[r][u] = owned_counts_[r];
      owned_counts_[r] += comm::shard_range(unit_counts_[u], ranks, r).count;
    }
  }
}

comm::ShardRange PartitionPlan::shard(size_t unit, int rank) const {
  return comm::shard_range(unit_counts_[unit], ranks_, rank);
}

size_t PartitionPlan::max_owned_count() const { return *std::max_element(owned_counts_.begin(), owned_counts_.end()); }

}  // namespace zerodp::zero
