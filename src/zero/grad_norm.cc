// SPDX-License-Identifier: Apache-2.0
#include "zero/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "core/error.h"
#include "optim/grad_utils.h"

namespace zerodp::zero {
namespace {

// Elements [first, first + out.size()) of a typed buffer, as fp32 (exact).
void widen(comm::ConstBuffer b, size_t first, std::span<float> out) {
  const auto* base = static_cast<const std::byte*>(b.data) + first * b.dtype.size();
  convert(base, b.dtype, out.data(), Dtype::fp32(), out.size());
}

// A 128-bit unsigned integer as two 64-bit halves (all_gather_value copies
// its bytes; no padding).
struct Wide {
  uint64_t lo = 0, hi = 0;
  void add(const Wide& o) {
    lo += o.lo;
    hi += o.hi + (lo < o.lo ? 1 : 0);
  }
};

// v >= 0, an integer-valued double below 2^127, as a Wide.
Wide to_wide(double v) {
  const double hi = std::floor(std::ldexp(v, -64));
  const double lo = v - std::ldexp(hi, 64);
  return {static_cast<uint64_t>(lo), static_cast<uint64_t>(hi)};
}

}  // namespace

double canonical_sum_of_squares(const PartitionPlan& plan, const StateBuffer& grads, comm::Communicator& shard_comm,
                                std::span<float> scratch, const NormReach& reach) {
  const size_t units = plan.num_units(), n = static_cast<size_t>(shard_comm.size());
  const int me = shard_comm.rank();
  const size_t head_floats = units * (kNormBlock - 1);
  ZDP_CHECK(scratch.size() >= optim::norm_scratch_floats(units, shard_comm.size()), ShapeError,
            "[grad norm] scratch of {} floats, needs {}", scratch.size(),
            optim::norm_scratch_floats(units, shard_comm.size()));
  // Each rank's head per unit: its shard's elements before the first block
  // boundary in it (all of the shard when none), at most kNormBlock - 1.
  const std::span<float> heads = scratch.first(head_floats);
  const std::span<float> all_heads = scratch.subspan(head_floats, head_floats * n);
  const std::span<float> block = scratch.subspan(head_floats * (n + 1), kNormBlock);
  std::fill(heads.begin(), heads.end(), 0.0f);
  for (size_t u = 0; u < units; ++u) {
    const comm::ShardRange s = plan.shard(u, me);
    const size_t to_boundary = (kNormBlock - s.offset % kNormBlock) % kNormBlock;
    widen(grads.own_shard(u), 0, heads.subspan(u * (kNormBlock - 1), std::min(to_boundary, s.count)));
  }
  shard_comm.all_gather_value_bytes(std::as_bytes(heads), std::as_writable_bytes(all_heads));
  // Calls fn(sum) for each block that starts in this rank's shards, in order.
  auto for_each_block_sum = [&](auto&& fn) {
    for (size_t u = 0; u < units; ++u) {
      if (!reach.skipped.empty() && reach.skipped[u]) continue;
      const comm::ShardRange s = plan.shard(u, me);
      const size_t unit_count = plan.unit_count(u);
      const comm::ConstBuffer own = grads.own_shard(u);
      for (size_t start = (s.offset + kNormBlock - 1) / kNormBlock * kNormBlock; start < s.offset + s.count;
           start += kNormBlock) {
        const size_t len = std::min(kNormBlock, unit_count - start);
        const size_t local = std::min(len, s.offset + s.count - start);
        widen(own, start - s.offset, block.first(local));
        // The rest from the next ranks' heads, in rank order.
        size_t filled = local;
        for (size_t r = static_cast<size_t>(me) + 1; filled < len && r < n; ++r) {
          const size_t take = std::min(len - filled, plan.shard(u, static_cast<int>(r)).count);
          const float* head = all_heads.data() + (r * units + u) * (kNormBlock - 1);
          std::copy_n(head, take, block.begin() + static_cast<std::ptrdiff_t>(filled));
          filled += take;
        }
        fn(optim::sum_of_squares(std::span<const float>(block.first(len))));
      }
    }
  };
  // Two passes over the blocks (they are not kept: a block sum per 256
  // elements would be memory the plan does not have): the largest, then the
  // fixed-point sum below it.
  double mine = 0.0;
  for_each_block_sum([&mine](double s) { mine = std::max(mine, s); });
  double largest = shard_comm.all_reduce_scalar(mine, comm::ReduceOp::kMax);
  if (reach.across) largest = reach.across->all_reduce_scalar(largest, comm::ReduceOp::kMax);
  if (largest <= 0.0) return 0.0;
  const int shift = 90 - std::ilogb(largest);  // the largest block sum below 2^91
  Wide local;
  for_each_block_sum([&local, shift](double s) { local.add(to_wide(std::nearbyint(std::ldexp(s, shift)))); });
  Wide total;
  for (const Wide& w : shard_comm.all_gather_value(local)) total.add(w);
  if (reach.across) {
    const Wide stage = total;
    total = {};
    for (const Wide& w : reach.across->all_gather_value(stage)) total.add(w);
  }
  return std::ldexp(std::ldexp(static_cast<double>(total.hi), 64) + static_cast<double>(total.lo), -shift);
}

}  // namespace zerodp::zero
