// SPDX-License-Identifier: Apache-2.0
// The alpha-beta cost of one collective, as zerodp's comm layer runs it on
// the flat layout (docs/comm.md, "Algorithms"): a reduce-scatter is one
// all-to-all exchange of shards followed by a local sum, an all-gather one
// exchange in which every rank sends its shard to every peer, an all-reduce
// a reduce-scatter and then an all-gather (two exchanges). In one exchange
// of a buffer of S bytes over N ranks, a rank sends its N - 1 shards of
// S/N bytes at once; with g ranks on a host, G = g x model_parallel of them
// sharing its link, the host's link carries per direction
//     G (N - g) S / N  bytes,
// and a rank sends (g - 1) S / N through shared memory to its own host.
// The two go in parallel, so one exchange takes
//     max(link.latency + G (N - g) S / N / link.bandwidth,
//         local.latency + (g - 1) S / N / local.bandwidth),
// each term present only when there are peers of that kind (N > g, g > 1).
// The local sum of the reduce-scatter is not a term of its own: calibration
// (plan/calibration.h) measures whole collectives, so it is inside the
// fitted bandwidth.
//
// Hybrid sharding (`--shard-group-size G`) runs collectives on two smaller
// communicators: a shard group of G consecutive ranks, and a replica group of
// the N/G ranks at one position of every group. A Placement says how such a
// communicator sits on the hosts: its ranks on one host (g above) and how
// many ranks of a host cross its link at once (G above: every rank of a host
// runs its own replica group's all-reduce at the same time, so they share
// the link even though each group has one rank per host).
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>

#include "plan/hardware.h"

namespace zerodp::plan {

enum class CollectiveOp { kReduceScatter, kAllGather, kAllReduce, kSmall };

// A communicator's ranks on the hosts (see above).
struct Placement {
  int ranks = 1;     // in the communicator
  int per_host = 1;  // of them on one host (its shared-memory peers + 1)
  int sharing = 1;   // data-parallel ranks of a host whose exchanges cross its link at once
};

// All N ranks, hw.ranks_per_host (at most N) of them on a host.
Placement flat_placement(int ranks, const Hardware& hw);
// Hybrid sharding with groups of `group` consecutive ranks of `ranks`: the
// shard group's placement and the replica group's. REQUIRES group divides
// ranks, and group and hw.ranks_per_host divide one another when the run
// spans hosts (plan/step_time.cc checks it).
Placement shard_group_placement(int ranks, int group, const Hardware& hw);
Placement replica_group_placement(int ranks, int group, const Hardware& hw);

// Exchange steps of the collective: 1, 1, 2, and 1 for kSmall (a scalar or
// small value every rank sends to every peer).
int exchange_steps(CollectiveOp op);

// Bytes one exchange of a buffer of `bytes` (S) puts on a host's link per
// direction, and a rank's shared-memory bytes to its own host, for N ranks
// of which `hw.ranks_per_host` share a host.
double link_bytes_per_exchange(double bytes, const Placement& p, const Hardware& hw);
double local_bytes_per_exchange(double bytes, const Placement& p);
// The same on the flat layout of `ranks`.
double link_bytes_per_exchange(double bytes, int ranks, const Hardware& hw);
double local_bytes_per_exchange(double bytes, int ranks, const Hardware& hw);

// Seconds for the collective on a buffer of `bytes` over the communicator
// (0 at one rank), and over the flat layout of `ranks`.
double collective_seconds(CollectiveOp op, double bytes, const Placement& p, const Hardware& hw);
double collective_seconds(CollectiveOp op, double bytes, int ranks, const Hardware& hw);

// Bytes this rank sends (docs/comm.md's byte accounting, N dividing S).
double sent_bytes(CollectiveOp op, double bytes, int ranks);

}  // namespace zerodp::plan
