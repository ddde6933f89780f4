// SPDX-License-Identifier: Apache-2.0
#include "split_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "comm/shard.h"

namespace zerodp::comm::split_cases {
namespace {

// Rank r's random contribution: magnitudes spread so fp32 sums round (the
// order of the additions shows in the bits).
std::vector<float> contribution(int rank, size_t count) {
  std::mt19937 rng(1234u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<float> v(count);
  for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

}  // namespace

void check_split(Communicator& world, int group) {
  const int n = world.size(), r = world.rank();
  ASSERT_EQ(n % group, 0);
  const uint64_t calls_before = world.stats().total_calls();
  auto inside = world.split(r / group);  // shard group: consecutive ranks
  auto across = world.split(r % group);  // replica group: same position in every group
  ASSERT_EQ(inside->size(), group);
  ASSERT_EQ(inside->rank(), r % group);
  ASSERT_EQ(across->size(), n / group);
  ASSERT_EQ(across->rank(), r / group);
  EXPECT_EQ(inside->backend_name(), world.backend_name());
  EXPECT_EQ(inside->options().timeout, world.options().timeout);

  // Integer sums name exactly the members.
  const uint64_t in_sum = inside->all_reduce_uint64(static_cast<uint64_t>(r), ReduceOp::kSum);
  const auto first = static_cast<uint64_t>(r / group) * static_cast<uint64_t>(group);
  EXPECT_EQ(in_sum, first * static_cast<uint64_t>(group) + static_cast<uint64_t>(group * (group - 1) / 2));
  std::vector<int> members = across->all_gather_value(r);
  for (int k = 0; k < n / group; ++k) EXPECT_EQ(members[static_cast<size_t>(k)], k * group + r % group);

  // Reduce-scatter inside, all-reduce of the shard across, all-gather
  // inside: every rank ends with the world's sum.
  constexpr size_t kCount = 1009;
  const std::vector<float> mine = contribution(r, kCount);
  std::vector<float> flat(kCount);
  world.all_reduce(ConstBuffer(mine.data(), kCount, Dtype::fp32()), Buffer(flat.data(), kCount, Dtype::fp32()),
                   ReduceOp::kSum);
  const uint64_t parent_calls = world.stats().total_calls();
  const ShardRange own = shard_range(kCount, group, inside->rank());
  std::vector<float> shard(own.count);
  std::vector<float> hybrid(kCount);
  const CommStats child_before = inside->stats();
  inside->reduce_scatter(ConstBuffer(mine.data(), kCount, Dtype::fp32()),
                         Buffer(shard.data(), own.count, Dtype::fp32()), ReduceOp::kSum);
  across->all_reduce(Buffer(shard.data(), own.count, Dtype::fp32()), Buffer(shard.data(), own.count, Dtype::fp32()),
                     ReduceOp::kSum);
  inside->all_gather(ConstBuffer(shard.data(), own.count, Dtype::fp32()), Buffer(hybrid.data(), kCount, Dtype::fp32()));
  // The children count in their own stats and in the parent's.
  EXPECT_EQ(world.stats().total_calls(), parent_calls + 3);
  const CommStats child = inside->stats() - child_before;
  EXPECT_EQ(child[Collective::kReduceScatter].calls, 1u);
  EXPECT_EQ(child[Collective::kReduceScatter].bytes_sent, (kCount - own.count) * sizeof(float));
  EXPECT_GT(world.stats().total_calls(), calls_before);

  // The error bound of any order of n fp32 additions: n eps sum |x_k|.
  std::vector<double> magnitude(kCount, 0.0);
  for (int k = 0; k < n; ++k) {
    const std::vector<float> theirs = contribution(k, kCount);
    for (size_t i = 0; i < kCount; ++i) magnitude[i] += std::fabs(static_cast<double>(theirs[i]));
  }
  size_t differ = 0;
  double worst = 0.0;  // in units of the bound
  for (size_t i = 0; i < kCount; ++i) {
    if (std::bit_cast<uint32_t>(flat[i]) != std::bit_cast<uint32_t>(hybrid[i])) ++differ;
    const double bound = n * std::ldexp(1.0, -24) * magnitude[i];
    worst = std::max(worst, std::fabs(static_cast<double>(flat[i]) - hybrid[i]) / bound);
  }
  if (std::has_single_bit(static_cast<unsigned>(group)) || group == n) {
    // One group, or a power-of-two group: its sums are whole subtrees of the world's pairwise
    // tree (comm/reduce.h), so the bits are the same.
    EXPECT_EQ(differ, 0u) << "group " << group << " of " << n << ": the hybrid sum is not the flat tree";
  } else {
    // Another tree: within the rounding bound of a sum of n terms, and
    // (these data) somewhere not the same bits.
    EXPECT_LE(worst, 1.0) << "group " << group << " of " << n;
    if (n > group) {
      EXPECT_GT(differ, 0u) << "group " << group << " of " << n << ": expected another addition tree";
    }
  }
  inside->barrier();
  across->barrier();
}

}  // namespace zerodp::comm::split_cases
