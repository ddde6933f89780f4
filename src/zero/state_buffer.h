// SPDX-License-Identifier: Apache-2.0
// StateBuffer: one typed buffer of model state (parameters, gradients or fp32
// master weights) in one of the two layouts of the partition plan:
//   kFlat  — the whole flat buffer (Φ elements), indexed like the model's;
//   kOwned — this rank's shards of every unit, concatenated in unit order.
// slice(unit, range) returns a unit-relative element range as a comm::Buffer,
// whichever the layout (for kOwned the range must lie in this rank's shard).
// Thread-safety: the view methods are const and safe; writes to the memory
// are the caller's to order.
#pragma once

#include <cstddef>
#include <span>

#include "comm/shard.h"
#include "comm/types.h"
#include "core/dtype.h"
#include "zero/memory_ledger.h"
#include "zero/partition_plan.h"

namespace zerodp::zero {

enum class Layout { kFlat, kOwned };

class StateBuffer {
 public:
  StateBuffer() = default;
  // Allocates the buffer zeroed and books it in `ledger` under `category`.
  StateBuffer(const PartitionPlan& plan, int rank, Layout layout, Dtype dtype, MemoryLedger& ledger,
              MemoryCategory category);

  bool allocated() const { return plan_ != nullptr; }
  Dtype dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * dtype_.size(); }

  // Elements [range.offset, range.offset + range.count) of unit `unit`.
  comm::Buffer slice(size_t unit, comm::ShardRange range) const;
  // The whole unit (kFlat only) and this rank's shard of it (both layouts).
  comm::Buffer unit(size_t unit) const;
  comm::Buffer own_shard(size_t unit) const;
  // fp32 view of a slice; REQUIRES dtype fp32.
  std::span<float> floats(size_t unit, comm::ShardRange range) const;
  comm::Buffer all() const { return {const_cast<std::byte*>(storage_.data()), count_, dtype_}; }

 private:
  const PartitionPlan* plan_ = nullptr;
  int rank_ = 0;
  Layout layout_ = Layout::kFlat;
  Dtype dtype_ = Dtype::fp32();
  size_t count_ = 0;
  LedgerBuffer<std::byte> storage_;
};

}  // namespace zerodp::zero
