// SPDX-License-Identifier: Apache-2.0
// Where stage 3 puts the units it gathers, and which gathers it keeps for a
// unit's next use: shared by the engine (zero/engine.cc), which follows it,
// and the planner (plan/step_time.cc), which predicts its traffic. It lives
// in core because zero and plan both read it and neither may include the
// other.
//
// Gathered units live in one region of `region_elements`: twice the largest
// unit with prefetch (the current op's unit and the next one's), once
// without. A unit used by two forward ops (GPT's tied embedding and LM head)
// may stay gathered from one use to the next when every gather between them
// still fits beside it; gather_schedule() decides that by running one
// micro-batch's gathers and releases through a GatherRegion, in the order
// the engine makes them:
//
//   forward:  for i in ops:  acquire(i, +1); then keep i's gather for the
//                            unit's next forward op, hold it for backward
//                            (the last op, when its backward reads weights)
//                            or release it
//   backward: for i in reversed(ops), where i's backward reads weights:
//                            acquire(i, -1) (the held op: no gather); release(i)
//   acquire(i, d): gather i unless already there; with prefetch, gather
//                  i + d too when it reads weights going in d
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace zerodp {

// Contiguous ranges of a fixed region, in elements. A range goes at the
// region's start if that is free, else flush with its end, else into the
// lowest gap it fits: with at most two ranges of at most half the region
// alive, the first two always succeed.
class GatherRegion {
 public:
  explicit GatherRegion(uint64_t capacity) : capacity_(capacity) {}
  // The offset of a new range of `count` elements, or nullopt when no gap fits.
  std::optional<uint64_t> allocate(uint64_t count);
  // REQUIRES: offset was returned by allocate and not freed since.
  void free(uint64_t offset);
  uint64_t capacity() const { return capacity_; }
  size_t live() const { return ranges_.size(); }

 private:
  bool fits(uint64_t offset, uint64_t count) const;
  uint64_t capacity_;
  std::map<uint64_t, uint64_t> ranges_;  // offset -> count
};

// A model's stage-3 schedule: each op's unit and element count, and
// whether its backward reads its weights (model::Op::backward_reads_params).
struct GatherOps {
  std::vector<uint64_t> counts;
  std::vector<int> units;
  std::vector<bool> backward_reads;
};

struct GatherSchedule {
  uint64_t region_elements = 0;
  // Per op: the next forward op of the same unit that forward hands the
  // op's gather to, or -1 (released, or held for backward).
  std::vector<int> pass_to;
  // Per op: gathers of its unit per micro-batch (forward and backward).
  std::vector<int> gathers;
};

// Keeps a gather for the unit's next forward use wherever the region still
// holds every gather in between (tried op by op, in order).
GatherSchedule gather_schedule(const GatherOps& ops, bool prefetch);

}  // namespace zerodp
