// SPDX-License-Identifier: Apache-2.0
// Per-collective counters a Communicator keeps for its own rank: calls, bytes
// sent, bytes received and seconds spent inside the call.
//
// Bytes are the algorithm's volume for this rank, not what the transport
// happened to move (see docs/comm.md): with S the full buffer bytes and s_r
// this rank's shard bytes,
//   reduce_scatter: sent S - s_r,          received (N-1) * s_r
//   all_gather:     sent (N-1) * s_r,      received S - s_r
//   all_reduce:     reduce_scatter + all_gather (2(N-1)/N * S when N divides)
//   broadcast:      root sent (N-1) * S,   others received S
//   all_reduce_scalar: sent and received (N-1) * 8
//   all_reduce_uint64: sent and received (N-1) * 8
//   all_gather_value:  sent and received (N-1) * B (B = the value's bytes:
//                      all_gather's rule with s_r = B)
//   barrier:        0
// Summed over ranks, sent == received. Thread-safety: a plain value; the
// owning Communicator updates it from the thread that runs the collective.
#pragma once

#include <array>
#include <cstdint>

#include "comm/types.h"

namespace zerodp::comm {

struct CollectiveStats {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double seconds = 0.0;
};

struct CommStats {
  std::array<CollectiveStats, kNumCollectives> by_kind{};

  CollectiveStats& operator[](Collective kind) { return by_kind[static_cast<size_t>(kind)]; }
  const CollectiveStats& operator[](Collective kind) const { return by_kind[static_cast<size_t>(kind)]; }

  uint64_t total_calls() const;
  uint64_t total_bytes_sent() const;
  uint64_t total_bytes_received() const;
  double total_seconds() const;

  // Counters accumulated since `earlier` (a snapshot taken with a copy):
  // CommStats before = comm.stats(); ...; CommStats step = comm.stats() - before;
  friend CommStats operator-(const CommStats& later, const CommStats& earlier);
};

}  // namespace zerodp::comm
