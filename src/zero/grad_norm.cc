// SPDX-License-Identifier: Apache-2.0
#include "zero/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/convert.h"
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

double canonical_sum_of_squares(const PartitionPlan& plan, const StateBuffer& grads, comm::Communicator& shard_comm) {
  const size_t units = plan.num_units(), n = static_cast<size_t>(shard_comm.size());
  const int me = shard_comm.rank();
  // Each rank's head per unit: its shard's elements before the first block
  // boundary in it (all of the shard when none), at most kNormBlock - 1.
  std::vector<float> heads(units * (kNormBlock - 1), 0.0f);
  for (size_t u = 0; u < units; ++u) {
    const comm::ShardRange s = plan.shard(u, me);
    const size_t to_boundary = (kNormBlock - s.offset % kNormBlock) % kNormBlock;
    const size_t count = std::min(to_boundary, s.count);
    widen(grads.own_shard(u), 0, std::span(heads).subspan(u * (kNormBlock - 1), count));
  }
  std::vector<float> all_heads(heads.size() * n);
  if (n > 1) {
    shard_comm.all_gather_value_bytes(std::as_bytes(std::span(heads)), std::as_writable_bytes(std::span(all_heads)));
  } else {
    all_heads = heads;
  }
  // The sums of the blocks that start in this rank's shards.
  std::vector<double> sums;
  std::vector<float> block(kNormBlock);
  for (size_t u = 0; u < units; ++u) {
    const comm::ShardRange s = plan.shard(u, me);
    const size_t unit_count = plan.unit_count(u);
    const comm::ConstBuffer own = grads.own_shard(u);
    size_t start = (s.offset + kNormBlock - 1) / kNormBlock * kNormBlock;  // the first block starting in it
    for (; start < s.offset + s.count; start += kNormBlock) {
      const size_t len = std::min(kNormBlock, unit_count - start);
      const size_t local = std::min(len, s.offset + s.count - start);
      widen(own, start - s.offset, std::span(block).first(local));
      // The rest from the next ranks' heads, in rank order.
      size_t filled = local;
      for (int r = me + 1; filled < len && r < static_cast<int>(n); ++r) {
        const comm::ShardRange rs = plan.shard(u, r);
        const size_t take = std::min(len - filled, rs.count);
        const float* head = all_heads.data() + (size_t(r) * units + u) * (kNormBlock - 1);
        std::copy_n(head, take, block.begin() + static_cast<std::ptrdiff_t>(filled));
        filled += take;
      }
      sums.push_back(optim::sum_of_squares(std::span<const float>(block).first(len)));
    }
  }
  const double largest = shard_comm.all_reduce_scalar(sums.empty() ? 0.0 : *std::max_element(sums.begin(), sums.end()),
                                                      comm::ReduceOp::kMax);
  if (largest <= 0.0) return 0.0;
  const int shift = 90 - std::ilogb(largest);  // the largest block sum below 2^91
  Wide local;
  for (const double s : sums) local.add(to_wide(std::nearbyint(std::ldexp(s, shift))));
  Wide total;
  for (const Wide& w : shard_comm.all_gather_value(local)) total.add(w);
  return std::ldexp(std::ldexp(static_cast<double>(total.hi), 64) + static_cast<double>(total.lo), -shift);
}

}  // namespace zerodp::zero
