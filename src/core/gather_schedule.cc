// SPDX-License-Identifier: Apache-2.0
#include "core/gather_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp {

bool GatherRegion::fits(uint64_t offset, uint64_t count) const {
  if (offset + count > capacity_) return false;
  auto next = ranges_.lower_bound(offset);
  if (next != ranges_.end() && next->first < offset + count) return false;
  if (next == ranges_.begin()) return true;
  const auto prev = std::prev(next);
  return prev->first + prev->second <= offset;
}

std::optional<uint64_t> GatherRegion::allocate(uint64_t count) {
  if (count > capacity_) return std::nullopt;
  std::optional<uint64_t> at;
  if (fits(0, count)) {
    at = 0;
  } else if (fits(capacity_ - count, count)) {
    at = capacity_ - count;
  } else {
    uint64_t gap = 0;  // the lowest gap that fits
    for (const auto& [offset, size] : ranges_) {
      if (offset >= gap + count) break;
      gap = offset + size;
    }
    if (fits(gap, count)) at = gap;
  }
  if (at) ranges_.emplace(*at, count);
  return at;
}

void GatherRegion::free(uint64_t offset) {
  const auto it = ranges_.find(offset);
  ZDP_CHECK(it != ranges_.end(), Error, "[gather] no range at offset {} to free", offset);
  ranges_.erase(it);
}

namespace {

// One micro-batch of the engine's gathers and releases (the header's
// pseudo-code) through `region`; false as soon as a gather does not fit.
// Counts each op's gathers into `gathers`.
class Replay {
 public:
  Replay(const GatherOps& ops, bool prefetch, const std::vector<int>& pass_to, uint64_t region)
      : ops_(ops), prefetch_(prefetch), pass_to_(pass_to), region_(region), at_(ops.units.size()) {}

  bool run(std::vector<int>& gathers) {
    gathers_.assign(ops_.units.size(), 0);
    const int last = static_cast<int>(ops_.units.size()) - 1;
    int held = -1;
    for (int i = 0; i <= last; ++i) {
      if (!acquire(i, +1)) return false;
      const int next = pass_to_[static_cast<size_t>(i)];
      if (next >= 0) {
        at_[static_cast<size_t>(next)] = at_[static_cast<size_t>(i)];
        at_[static_cast<size_t>(i)].reset();
      } else if (i == last && reads(i, -1)) {
        held = i;
      } else {
        release(i);
      }
    }
    for (int i = last; i >= 0; --i) {
      if (!reads(i, -1)) continue;
      if (i != held && !acquire(i, -1)) return false;
      if (i == held && !prefetch(i - 1, -1)) return false;
      release(i);
    }
    gathers = gathers_;
    return true;
  }

 private:
  bool reads(int i, int direction) const { return direction > 0 || ops_.backward_reads[static_cast<size_t>(i)]; }
  bool gather(int i) {
    const auto offset = region_.allocate(ops_.counts[static_cast<size_t>(ops_.units[static_cast<size_t>(i)])]);
    if (!offset) return false;
    at_[static_cast<size_t>(i)] = offset;
    ++gathers_[static_cast<size_t>(i)];
    return true;
  }
  bool prefetch(int j, int direction) {
    if (!prefetch_ || j < 0 || j >= static_cast<int>(at_.size()) || at_[static_cast<size_t>(j)]) return true;
    return !reads(j, direction) || gather(j);
  }
  bool acquire(int i, int direction) {
    if (!at_[static_cast<size_t>(i)] && !gather(i)) return false;
    return prefetch(i + direction, direction);
  }
  void release(int i) {
    auto& at = at_[static_cast<size_t>(i)];
    if (at) region_.free(*at);
    at.reset();
  }

  const GatherOps& ops_;
  bool prefetch_;
  const std::vector<int>& pass_to_;
  GatherRegion region_;
  std::vector<std::optional<uint64_t>> at_;  // per op: where its gathered unit is
  std::vector<int> gathers_;
};

}  // namespace

GatherSchedule gather_schedule(const GatherOps& ops, bool prefetch) {
  const size_t n = ops.units.size();
  ZDP_CHECK(n > 0 && ops.backward_reads.size() == n, Error, "[gather] {} ops, {} backward flags", n,
            ops.backward_reads.size());
  uint64_t largest = 0;
  for (int u : ops.units) {
    ZDP_CHECK(u >= 0 && static_cast<size_t>(u) < ops.counts.size(), Error, "[gather] op reads unit {} of {}", u,
              ops.counts.size());
    largest = std::max(largest, ops.counts[static_cast<size_t>(u)]);
  }
  GatherSchedule s;
  s.region_elements = (prefetch && n > 1 ? 2 : 1) * largest;
  s.pass_to.assign(n, -1);
  std::vector<int> gathers;
  ZDP_CHECK(Replay(ops, prefetch, s.pass_to, s.region_elements).run(gathers), Error,
            "[gather] the schedule without kept gathers does not fit its region");
  for (size_t i = 0; i < n; ++i) {
    // The unit's next forward op, if any: try handing it this gather.
    size_t next = i + 1;
    while (next < n && ops.units[next] != ops.units[i]) ++next;
    if (next == n) continue;
    std::vector<int> pass_to = s.pass_to;
    pass_to[i] = static_cast<int>(next);
    if (Replay(ops, prefetch, pass_to, s.region_elements).run(gathers)) s.pass_to = pass_to;
  }
  ZDP_CHECK(Replay(ops, prefetch, s.pass_to, s.region_elements).run(s.gathers), Error, "[gather] the kept schedule");
  return s;
}

}  // namespace zerodp
