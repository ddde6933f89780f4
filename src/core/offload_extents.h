// SPDX-License-Identifier: Apache-2.0
// The offload files' layout in numbers (zero/offload_store.h for the
// optimizer's states, zero/param_store.h for stage 3's parameters): one
// extent per unit, each rounded up to the direct-I/O block on the disk, and
// staging buffers of the largest in RAM (kOffloadSlots for the states, one
// for the parameters). The stores allocate by these; the planner predicts
// by them.
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/scratch_file.h"

namespace zerodp {

// The unit being worked on, the next one read ahead, the last one written behind.
inline constexpr int kOffloadSlots = 3;
// The least bytes one request of an offload transfer moves: a unit's or a
// shard's bytes are spread over the device's queue, but not in pieces so
// small that the requests cost more than the bytes.
inline constexpr size_t kMinOffloadPiece = size_t{1} << 20;

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
// --offload-params' one staging buffer (zero/param_store.h): the largest
// shard, rounded up, and a block to align it.
inline uint64_t param_staging_bytes(std::span<const size_t> shards) {
  return offload_slot_bytes(shards) + kDirectAlignment;
}
// Each extent's offset in the file: one after another, each block-aligned.
inline std::vector<uint64_t> offload_offsets(std::span<const size_t> extents) {
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (const size_t b : extents) {
    offsets.push_back(at);
    at += round_to_direct_block(b);
  }
  return offsets;
}
// The first block-aligned address of a staging buffer (the extra block the
// staging sizes above book leaves room for it).
inline std::byte* direct_aligned(std::byte* buffer) {
  const auto address = reinterpret_cast<uintptr_t>(buffer);
  return buffer + (round_to_direct_block(address) - address);
}
// The file's bytes.
inline uint64_t offload_disk_bytes(std::span<const size_t> extents) {
  uint64_t total = 0;
  for (const size_t b : extents) total += round_to_direct_block(b);
  return total;
}

}  // namespace zerodp
