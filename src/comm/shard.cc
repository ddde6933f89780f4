// SPDX-License-Identifier: Apache-2.0
#include "comm/shard.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp::comm {

ShardRange shard_range(size_t count, int ranks, int rank) {
  ZDP_CHECK(ranks >= 1, ConfigError, "[shard_range] ranks must be at least 1, got {}", ranks);
  ZDP_CHECK(rank >= 0 && rank < ranks, ConfigError, "[shard_range] rank {} is out of range for {} ranks", rank, ranks);
  const size_t n = static_cast<size_t>(ranks);
  const size_t r = static_cast<size_t>(rank);
  const size_t base = count / n;
  const size_t extra = count % n;
  return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

}  // namespace zerodp::comm
