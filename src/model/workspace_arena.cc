// SPDX-License-Identifier: Apache-2.0
#include "model/workspace_arena.h"

namespace zerodp::model::detail {
namespace {

size_t padded(size_t count) { return (count + kArenaAlignFloats - 1) / kArenaAlignFloats * kArenaAlignFloats; }

}  // namespace

void ArenaCarver::add(std::span<float>& slot, size_t count, bool is_activation) {
  requests_.push_back({&slot, count});
  (is_activation ? activation_floats_ : scratch_floats_) += padded(count);
  total_ += padded(count);
}

AlignedBuffer<float> ArenaCarver::carve() {
  AlignedBuffer<float> arena(total_);
  size_t o = 0;
  for (const Request& r : requests_) {
    *r.slot = std::span<float>(arena.data() + o, r.count);
    o += padded(r.count);
  }
  return arena;
}

}  // namespace zerodp::model::detail
