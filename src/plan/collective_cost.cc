// SPDX-License-Identifier: Apache-2.0
#include "plan/collective_cost.h"

#include <algorithm>

namespace zerodp::plan {

Placement flat_placement(int ranks, const Hardware& hw) {
  const int g = std::min(hw.ranks_per_host, ranks);
  return {.ranks = ranks, .per_host = g, .sharing = g};
}

// Consecutive ranks: a group of G holds min(G, g) ranks of each host it
// touches, and all of a host's ranks are in groups of the same kind, so
// with G >= g the host's g ranks are one group's and share the link.
Placement shard_group_placement(int ranks, int group, const Hardware& hw) {
  return flat_placement(std::min(group, ranks), hw);
}

// The replica group of position p holds ranks p, p + G, p + 2G, ...: with
// G >= g one of them per host, and a host's g ranks run g such groups' all-
// reduces at once through its link; with G < g, g / G of them per host.
Placement replica_group_placement(int ranks, int group, const Hardware& hw) {
  const int replicas = ranks / group;
  const int g = std::min(hw.ranks_per_host, ranks);
  const int per_host = std::max(1, g / group);
  return {.ranks = replicas, .per_host = std::min(per_host, replicas), .sharing = g};
}

int exchange_steps(CollectiveOp op) { return op == CollectiveOp::kAllReduce ? 2 : 1; }

double link_bytes_per_exchange(double bytes, const Placement& p, const Hardware& hw) {
  const double sharing = static_cast<double>(p.sharing) * hw.model_parallel;
  return sharing * (p.ranks - p.per_host) * bytes / p.ranks;
}

double local_bytes_per_exchange(double bytes, const Placement& p) {
  return static_cast<double>(p.per_host - 1) * bytes / p.ranks;
}

double link_bytes_per_exchange(double bytes, int ranks, const Hardware& hw) {
  return link_bytes_per_exchange(bytes, flat_placement(ranks, hw), hw);
}

double local_bytes_per_exchange(double bytes, int ranks, const Hardware& hw) {
  return local_bytes_per_exchange(bytes, flat_placement(ranks, hw));
}

double collective_seconds(CollectiveOp op, double bytes, const Placement& p, const Hardware& hw) {
  if (p.ranks <= 1) return 0;
  double step = 0;
  if (p.ranks > p.per_host) step = hw.link.latency_s + link_bytes_per_exchange(bytes, p, hw) / hw.link.bandwidth;
  if (p.per_host > 1) {
    step = std::max(step, hw.local.latency_s + local_bytes_per_exchange(bytes, p) / hw.local.bandwidth);
  }
  return exchange_steps(op) * step;
}

double collective_seconds(CollectiveOp op, double bytes, int ranks, const Hardware& hw) {
  return collective_seconds(op, bytes, flat_placement(ranks, hw), hw);
}

double sent_bytes(CollectiveOp op, double bytes, int ranks) { return exchange_steps(op) * bytes * (ranks - 1) / ranks; }

}  // namespace zerodp::plan
