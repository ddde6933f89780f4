// SPDX-License-Identifier: Apache-2.0
#include "core/grad_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp {

GradSchedule grad_schedule(const GradOps& ops, uint64_t compute_copy_elements) {
  const size_t num_ops = ops.units.size();
  const size_t num_units = ops.counts.size();
  ZDP_CHECK(ops.backward_reads.size() == num_ops && ops.weight_grad_apart.size() == num_ops, Error,
            "[grad schedule] {} ops but {} and {} flags", num_ops, ops.backward_reads.size(),
            ops.weight_grad_apart.size());
  GradSchedule s;
  s.deferred.assign(num_ops, false);
  s.opens_at.assign(num_units, -1);
  s.closes_at.assign(num_units, -1);
  s.waiting.assign(num_units, {});
  s.in_compute_copy.assign(num_units, GradSchedule::kPooled);
  auto unit_of = [&ops](size_t op) {
    const int u = ops.units[op];
    ZDP_CHECK(u >= 0 && static_cast<size_t>(u) < ops.counts.size(), Error, "[grad schedule] op {} reads unit {}", op,
              u);
    return static_cast<size_t>(u);
  };
  for (size_t i = 0; i < num_ops; ++i) {
    const size_t u = unit_of(i);
    if (s.closes_at[u] < 0) s.closes_at[u] = static_cast<int>(i);
  }
  // In backward order: an op defers while its unit is not open and a later
  // backward op of the unit follows.
  for (size_t k = num_ops; k-- > 0;) {
    const size_t u = unit_of(k);
    if (s.opens_at[u] >= 0) continue;
    if (ops.weight_grad_apart[k] && static_cast<int>(k) != s.closes_at[u]) {
      s.deferred[k] = true;
      s.waiting[u].push_back(static_cast<int>(k));
    } else {
      s.opens_at[u] = static_cast<int>(k);
    }
  }
  if (compute_copy_elements == 0) return s;
  // Units in the order their gradients open; one in the compute copy at a
  // time: the last placed one's lifetime must have ended (its closing op
  // above this unit's opening op).
  std::vector<size_t> by_opening;
  for (size_t u = 0; u < num_units; ++u) {
    if (s.opens_at[u] >= 0) by_opening.push_back(u);
  }
  std::sort(by_opening.begin(), by_opening.end(), [&s](size_t a, size_t b) { return s.opens_at[a] > s.opens_at[b]; });
  int busy_until = static_cast<int>(num_ops);  // the placed gradient's closing op; num_ops: none
  for (size_t u : by_opening) {
    if (s.opens_at[u] >= busy_until) continue;
    uint64_t below = 0;  // the largest unit an op of its lifetime converts into the copy
    for (int k = s.closes_at[u]; k <= s.opens_at[u]; ++k) {
      const auto op = static_cast<size_t>(k);
      if (ops.backward_reads[op]) below = std::max(below, ops.counts[unit_of(op)]);
    }
    if (below + ops.counts[u] > compute_copy_elements) continue;
    s.in_compute_copy[u] = below;
    busy_until = s.closes_at[u];
  }
  return s;
}

}  // namespace zerodp
