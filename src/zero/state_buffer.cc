// SPDX-License-Identifier: Apache-2.0
#include "zero/state_buffer.h"

#include "core/error.h"

namespace zerodp::zero {

StateBuffer::StateBuffer(const PartitionPlan& plan, int rank, Layout layout, Dtype dtype, MemoryLedger& ledger,
                         MemoryCategory category)
    : plan_(&plan),
      rank_(rank),
      layout_(layout),
      dtype_(dtype),
      count_(layout == Layout::kFlat ? plan.num_params() : plan.owned_count(rank)),
      storage_(ledger, category, count_ * dtype.size()) {}

comm::Buffer StateBuffer::slice(size_t unit, comm::ShardRange range) const {
  size_t start;
  if (layout_ == Layout::kFlat) {
    start = plan_->unit_offset(unit) + range.offset;
  } else {
    const comm::ShardRange own = plan_->shard(unit, rank_);
    ZDP_CHECK(range.offset >= own.offset && range.offset + range.count <= own.offset + own.count, ShapeError,
              "[state_buffer] range [{}, +{}) of unit {} is outside rank {}'s shard [{}, +{})", range.offset,
              range.count, unit, rank_, own.offset, own.count);
    start = plan_->owned_offset(unit, rank_) + (range.offset - own.offset);
  }
  auto* base = const_cast<std::byte*>(storage_.data());
  return {base + start * dtype_.size(), range.count, dtype_};
}

comm::Buffer StateBuffer::unit(size_t unit) const {
  ZDP_CHECK(layout_ == Layout::kFlat, ShapeError, "[state_buffer] unit {} is not whole in an owned-layout buffer",
            unit);
  return slice(unit, {0, plan_->unit_count(unit)});
}

comm::Buffer StateBuffer::own_shard(size_t unit) const { return slice(unit, plan_->shard(unit, rank_)); }

std::span<float> StateBuffer::floats(size_t unit, comm::ShardRange range) const {
  ZDP_CHECK(dtype_ == Dtype::fp32(), ShapeError, "[state_buffer] floats() of a {} buffer", dtype_.name());
  const comm::Buffer b = slice(unit, range);
  return {static_cast<float*>(b.data), b.count};
}

}  // namespace zerodp::zero
