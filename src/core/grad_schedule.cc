// SPDX-License-Identifier: Apache-2.0
#include "core/grad_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp {

namespace {

size_t unit_of(const GradOps& ops, size_t op) {
  const int u = ops.units[op];
  ZDP_CHECK(u >= 0 && static_cast<size_t>(u) < ops.counts.size(), Error, "[grad schedule] op {} reads unit {}", op, u);
  return static_cast<size_t>(u);
}

uint64_t grad_row(const GradOps& ops, size_t u) { return u < ops.grad_rows.size() ? ops.grad_rows[u] : 0; }

// The elements op `op` puts into the compute copy in its backward.
uint64_t copied(const GradOps& ops, size_t op) {
  if (!ops.copied.empty()) return ops.copied[op];
  return ops.backward_reads[op] ? ops.counts[unit_of(ops, op)] : 0;
}

// The most an op of unit u's gradient's lifetime puts into the copy.
uint64_t below(const GradOps& ops, const GradSchedule& s, size_t u) {
  uint64_t most = 0;
  for (int k = s.closes_at[u]; k <= s.opens_at[u]; ++k) most = std::max(most, copied(ops, static_cast<size_t>(k)));
  return most;
}

// Everything but the copy's placement: which weight parts wait, when each
// gradient opens and closes, and which units are made in rows (where
// `rows` allows any: there is a compute copy to make them in).
GradSchedule lifetimes(const GradOps& ops, bool rows, std::vector<bool>& in_rows) {
  const size_t num_ops = ops.units.size();
  const size_t num_units = ops.counts.size();
  ZDP_CHECK(ops.backward_reads.size() == num_ops && ops.weight_grad_apart.size() == num_ops &&
                (ops.copied.empty() || ops.copied.size() == num_ops) &&
                (ops.grad_rows.empty() || ops.grad_rows.size() == num_units),
            Error, "[grad schedule] {} ops and {} units but {}, {}, {} and {} flags", num_ops, num_units,
            ops.backward_reads.size(), ops.weight_grad_apart.size(), ops.copied.size(), ops.grad_rows.size());
  GradSchedule s;
  s.deferred.assign(num_ops, false);
  s.opens_at.assign(num_units, -1);
  s.closes_at.assign(num_units, -1);
  s.waiting.assign(num_units, {});
  s.in_compute_copy.assign(num_units, GradSchedule::kPooled);
  s.chunk_rows.assign(num_units, 0);
  for (size_t i = 0; i < num_ops; ++i) {
    const size_t u = unit_of(ops, i);
    if (s.closes_at[u] < 0) s.closes_at[u] = static_cast<int>(i);
  }
  // A unit is made in rows where it has rows and every op of it runs its
  // weight part apart.
  in_rows.assign(num_units, false);
  for (size_t u = 0; u < num_units && rows; ++u) {
    in_rows[u] = grad_row(ops, u) > 0 && ops.counts[u] % grad_row(ops, u) == 0;
  }
  for (size_t i = 0; i < num_ops; ++i) {
    if (!ops.weight_grad_apart[i]) in_rows[unit_of(ops, i)] = false;
  }
  // In backward order: an op defers while its unit is not open and a later
  // backward op of the unit follows; in rows, every op of the unit defers
  // and the closing op runs them all.
  for (size_t k = num_ops; k-- > 0;) {
    const size_t u = unit_of(ops, k);
    const bool closing = static_cast<int>(k) == s.closes_at[u];
    if (in_rows[u]) {
      s.deferred[k] = !closing;
      s.waiting[u].push_back(static_cast<int>(k));
      if (closing) s.opens_at[u] = s.closes_at[u];
      continue;
    }
    if (s.opens_at[u] >= 0) continue;
    if (ops.weight_grad_apart[k] && !closing) {
      s.deferred[k] = true;
      s.waiting[u].push_back(static_cast<int>(k));
    } else {
      s.opens_at[u] = static_cast<int>(k);
    }
  }
  return s;
}

}  // namespace

GradSchedule grad_schedule(const GradOps& ops, uint64_t compute_copy_elements) {
  // No copy, no rows: every gradient is made whole (pooled, or in grads_).
  std::vector<bool> in_rows;
  GradSchedule s = lifetimes(ops, compute_copy_elements > 0, in_rows);
  if (compute_copy_elements == 0) return s;
  const size_t num_ops = ops.units.size();
  const size_t num_units = ops.counts.size();
  // Made in rows: at the closing op, as many rows as the copy holds.
  std::vector<bool> rows_at_op(num_ops, false);
  for (size_t u = 0; u < num_units; ++u) {
    if (!in_rows[u]) continue;
    const uint64_t row = grad_row(ops, u);
    ZDP_CHECK(compute_copy_elements >= row, Error,
              "[grad schedule] a compute copy of {} elements holds no row of unit {}'s gradient ({} elements)",
              compute_copy_elements, u, row);
    s.chunk_rows[u] = std::min(compute_copy_elements / row, ops.counts[u] / row);
    s.in_compute_copy[u] = 0;
    rows_at_op[static_cast<size_t>(s.closes_at[u])] = true;
  }
  // Units in the order their gradients open; one in the compute copy at a
  // time: the last placed one's lifetime must have ended (its closing op
  // above this unit's opening op), and no unit is being made in rows there.
  std::vector<size_t> by_opening;
  for (size_t u = 0; u < num_units; ++u) {
    if (s.opens_at[u] >= 0 && !in_rows[u]) by_opening.push_back(u);
  }
  std::sort(by_opening.begin(), by_opening.end(), [&s](size_t a, size_t b) { return s.opens_at[a] > s.opens_at[b]; });
  int busy_until = static_cast<int>(num_ops);  // the placed gradient's closing op; num_ops: none
  for (size_t u : by_opening) {
    if (s.opens_at[u] >= busy_until) continue;
    bool crosses_rows = false;
    for (int k = s.closes_at[u]; k <= s.opens_at[u]; ++k)
      crosses_rows = crosses_rows || rows_at_op[static_cast<size_t>(k)];
    const uint64_t at = below(ops, s, u);
    if (crosses_rows || at + ops.counts[u] > compute_copy_elements) continue;
    s.in_compute_copy[u] = at;
    busy_until = s.closes_at[u];
  }
  return s;
}

uint64_t compute_copy_elements(const GradOps& ops) {
  uint64_t largest = 0;
  for (uint64_t c : ops.counts) largest = std::max(largest, c);
  if (ops.copied.empty()) return largest;
  std::vector<bool> in_rows;
  const GradSchedule s = lifetimes(ops, /*rows=*/true, in_rows);
  uint64_t size = 0;
  for (size_t op = 0; op < ops.units.size(); ++op) size = std::max(size, copied(ops, op));
  for (size_t u = 0; u < ops.counts.size(); ++u) {
    if (s.opens_at[u] < 0) continue;
    size = std::max(size, in_rows[u] ? grad_row(ops, u) : below(ops, s, u) + ops.counts[u]);
  }
  return size;
}

}  // namespace zerodp
