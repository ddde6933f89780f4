// SPDX-License-Identifier: Apache-2.0
// Block-wise 8-bit quantization of optimizer state, as bitsandbytes' 8-bit
// optimizers do it (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization", arXiv 2110.02861): a block of kBlockSize values is stored as
// one fp32 scale, the block's largest magnitude (absmax), and one byte per
// value, the index of the nearest code of a 256-entry "dynamic" map in
// [-1, 1] (signed, for Adam's m) or [0, 1] (unsigned, for v). The maps are
// bitsandbytes' own (dynamic_map_table.h, generated).
//
// Blocks are anchored at the first element of a unit: block b of a unit is
// its elements [b*kBlockSize, (b+1)*kBlockSize), the last one shorter. Units
// are a property of the model, so the blocks are the same whatever the
// number of ranks, the stage or where the shards are cut; a shard's first
// and last blocks may be shared with neighbouring ranks (docs/optim.md).
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace zerodp::optim::quant8 {

inline constexpr size_t kBlockSize = 2048;

// A dynamic map: the 256 codes, ascending, and the 255 midpoints between
// neighbours (in float: (code[k] + code[k+1]) / 2, exact in double then
// rounded once). `first` speeds the search up: for the floats whose top 16
// bits are i, every answer is at least first[i] (the answer for the
// smallest of them), and at most max_steps codes above it (the largest
// difference over every i of finite floats, worked out when the map is
// made), which is how many steps a vector loop takes.
inline constexpr int kIndexBits = 16;
inline constexpr size_t kFirstEntries = size_t{1} << kIndexBits;
struct DynamicMap {
  std::array<float, 256> code;
  std::array<float, 255> mid;
  // kFirstEntries answers, then 3 zero bytes so that a 32-bit gather at any
  // entry stays inside the array.
  std::array<uint8_t, kFirstEntries + 3> first;
  uint8_t max_steps;
  uint8_t zero;    // the index of the code 0.0 (+0: the codes below it are the negative ones)
  bool is_signed;  // signed map: the quantizer keeps the value's sign (below)
};
const DynamicMap& signed_map();    // Adam's first moment
const DynamicMap& unsigned_map();  // Adam's second moment

// The index of the code nearest to x (a value divided by its block's
// absmax, so in [-1, 1]); a value exactly between two codes takes the lower
// one. For the signed map, as bitsandbytes: when the nearest code's sign bit
// differs from x's (a small negative value nearest to 0), the code one step
// further towards x's sign, so a moment never loses its sign. REQUIRES x not NaN.
inline uint8_t quantize(const DynamicMap& map, float x) {
  // The number of midpoints below x, counted up from first[] (the same
  // answer as a binary search over all of them: the midpoints are sorted).
  unsigned q = map.first[std::bit_cast<uint32_t>(x) >> (32 - kIndexBits)];
  while (q < 255 && x > map.mid[q]) ++q;
  if (map.is_signed) {
    const bool x_negative = std::signbit(x);
    if (x_negative != std::signbit(map.code[q])) q = x_negative ? q - 1 : q + 1;
  }
  return static_cast<uint8_t>(q);
}

// The blocks of a unit that its elements [offset, offset + count) touch:
// [first, first + count); none when count is 0.
struct BlockRange {
  size_t first = 0;
  size_t count = 0;
};
inline BlockRange blocks_touched(size_t offset, size_t count) {
  if (count == 0) return {offset / kBlockSize, 0};
  const size_t first = offset / kBlockSize;
  return {first, (offset + count - 1) / kBlockSize - first + 1};
}
// The blocks whose first element lies in [offset, offset + count): every
// block of a unit has exactly one such shard, which is the one whose
// checkpoint record holds its scale (docs/checkpoint-format.md).
inline BlockRange blocks_starting_in(size_t offset, size_t count) {
  const size_t first = (offset + kBlockSize - 1) / kBlockSize;
  const size_t end = (offset + count + kBlockSize - 1) / kBlockSize;
  return {first, end - first};
}

}  // namespace zerodp::optim::quant8
