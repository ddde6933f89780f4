// SPDX-License-Identifier: Apache-2.0
#include "plan/collective_cost.h"

#include <algorithm>

namespace zerodp::plan {

int exchange_steps(CollectiveOp op) { return op == CollectiveOp::kAllReduce ? 2 : 1; }

double link_bytes_per_exchange(double bytes, int ranks, const Hardware& hw) {
  const int g = std::min(hw.ranks_per_host, ranks);
  const double sharing = static_cast<double>(g) * hw.model_parallel;
  return sharing * (ranks - g) * bytes / ranks;
}

double local_bytes_per_exchange(double bytes, int ranks, const Hardware& hw) {
  const int g = std::min(hw.ranks_per_host, ranks);
  return static_cast<double>(g - 1) * bytes / ranks;
}

double collective_seconds(CollectiveOp op, double bytes, int ranks, const Hardware& hw) {
  if (ranks <= 1) return 0;
  const int g = std::min(hw.ranks_per_host, ranks);
  double step = 0;
  if (ranks > g) step = hw.link.latency_s + link_bytes_per_exchange(bytes, ranks, hw) / hw.link.bandwidth;
  if (g > 1) {
    step = std::max(step, hw.local.latency_s + local_bytes_per_exchange(bytes, ranks, hw) / hw.local.bandwidth);
  }
  return exchange_steps(op) * step;
}

double sent_bytes(CollectiveOp op, double bytes, int ranks) { return exchange_steps(op) * bytes * (ranks - 1) / ranks; }

}  // namespace zerodp::plan
