// SPDX-License-Identifier: Apache-2.0
// How a buffer of `count` elements is split among N ranks (the uneven-shard
// rule, see docs/comm.md): ranks r < count % N hold ceil(count / N) elements,
// the others floor(count / N), contiguous in rank order. So shard r starts at
// r * floor(count / N) + min(r, count % N), and when count < N the ranks
// r >= count hold empty shards. No padding is ever added.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>

namespace zerodp::comm {

struct ShardRange {
  size_t offset = 0;
  size_t count = 0;
  friend bool operator==(const ShardRange&, const ShardRange&) = default;
};

// REQUIRES ranks >= 1 and 0 <= rank < ranks (ConfigError otherwise).
ShardRange shard_range(size_t count, int ranks, int rank);

}  // namespace zerodp::comm
