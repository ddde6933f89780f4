// SPDX-License-Identifier: Apache-2.0
// The offload file's layout in numbers (zero/offload_store.h): one extent
// per unit, each rounded up to the direct-I/O block on the disk, and
// kOffloadSlots staging buffers of the largest in RAM. The store allocates
// by these; the planner predicts by them.
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/scratch_file.h"

namespace zerodp {

// The unit being worked on, the next one read ahead, the last one written behind.
inline constexpr int kOffloadSlots = 3;

inline uint64_t round_to_direct_block(uint64_t bytes) {
  return (bytes + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
}
// One staging buffer: the largest extent, rounded up.
inline uint64_t offload_slot_bytes(std::span<const size_t> extents) {
  uint64_t largest = 0;
  for (const size_t b : extents) largest = std::max<uint64_t>(largest, b);
  return round_to_direct_block(largest);
}
// The RAM the store books: its slots, and a block to align the first.
inline uint64_t offload_staging_bytes(std::span<const size_t> extents) {
  return kOffloadSlots * offload_slot_bytes(extents) + kDirectAlignment;
}
// The file's bytes.
inline uint64_t offload_disk_bytes(std::span<const size_t> extents) {
  uint64_t total = 0;
  for (const size_t b : extents) total += round_to_direct_block(b);
  return total;
}

}  // namespace zerodp
