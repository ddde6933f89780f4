// SPDX-License-Identifier: Apache-2.0
// Block quantization for the compressed collectives (ZeRO++'s qwZ and qgZ):
// what crosses the link when Communicator::all_gather_quantized or
// reduce_scatter_quantized is called, and the scratch those calls need.
//
// Format of a packed range (QuantFormat, PackedRange): a buffer's elements
// [offset, offset + count), cut into blocks that never hold elements of two
// tensors. The range is cut at every tensor start inside it (the buffer's
// `tensor_starts`; none: the buffer is one tensor), and each piece into
// blocks of `block` elements from the piece's first element (its last block
// may be shorter). Packed: one fp32 scale per block, in order, then the
// codes, one signed byte per element (int8) or two per byte (int4: element
// 2i in the low nibble, 2i+1 in the high one, each a 4-bit two's
// complement). Per block, symmetric absmax:
//
//   scale = absmax / qmax                         (fp32 division; qmax 127 or 7)
//   code  = clamp(nearbyint(x / scale), -qmax, qmax)   (round half to even)
//   x'    = code * scale                          (fp32, one rounding)
//
// so |x - x'| <= scale / 2 plus fp32 rounding of the division and the
// product. With RoundingMode::kStochastic the code is instead t = x / scale
// rounded down, plus one when u < t - floor(t), where u in [0, 1) is the
// top 24 bits of mix64(key + (e + 1) * kGoldenGamma) (core/counter_hash.h)
// for the element's index e in the buffer (offset + i) and the caller's
// `key`: unbiased (E[x'] = x), |x - x'| < scale, and the same bits for the
// same (key, element) on every rank, backend and SIMD level. The packed
// format does not change; a receiver cannot tell the two apart.
//
// A block whose absmax is 0, or so small that absmax / qmax underflows to
// 0, has scale 0 and dequantizes to zeros. A block holding a NaN or an
// infinity has scale NaN (the canonical quiet NaN 0x7FC00000) and every
// one of its elements dequantizes to NaN, so a non-finite gradient stays
// non-finite after the reduction (the engine's overflow check and fp16
// loss scaling rely on it).
//
// Why blocks end at tensor boundaries: a scale is the absmax of its block,
// so a block that held a LayerNorm gain (values near 1) and the bias after
// it (values near 0.01) would give the bias a step of 1/127 and round most
// of it to zero. gpt-10m's quantized weights lost 20% of validation loss
// over 1200 steps that way (docs/scale.md).
//
// Portable C++ without intrinsics, its loops written so that the compiler
// vectorises them at every level (the absmax as an integer max, rounding by
// adding 1.5 * 2^23; quantize.cc): each element's division, rounding,
// product and comparison are single IEEE operations, so the bits are the
// same at every SIMD level, in the portable and the native build, and on
// every backend (and the compiler may not contract: -ffp-contract=off).
// Stochastic rounding's draws stay a scalar loop.
// Thread-safety: pure functions over caller memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "comm/types.h"
#include "core/rounding.h"

namespace zerodp::comm {

// What a compressed collective sends: none (the plain collective), int8 or
// int4 codes with one fp32 scale per block.
enum class Quantization : uint8_t { kNone = 0, kInt8 = 1, kInt4 = 2 };

// Elements per scale, when the user names none (zerodp train
// --quantize-block). 256: the scale costs 4/256 = 1.6% on top of the int8
// codes (1.0156 bytes per element, 3.94x less than fp32, 1.97x less than
// bf16), and an outlier spoils at most 256 neighbours' resolution.
inline constexpr uint32_t kDefaultQuantBlock = 256;
// The blocks offered: powers of two from 32 (a scale per 32 codes: 12.5%
// more bytes) to 2048, so that no block is longer than kReduceChunk below.
inline constexpr uint32_t kMinQuantBlock = 32;
inline constexpr uint32_t kMaxQuantBlock = 2048;
bool quant_block_offered(uint64_t block);

// What a compressed collective sends: the codes and the elements per scale.
struct QuantFormat {
  Quantization codes = Quantization::kNone;
  uint32_t block = kDefaultQuantBlock;
  // How values round to codes (the format above; core/rounding.h). Nearest
  // gives a value the same error every call; stochastic a fresh, unbiased
  // one keyed by the call. The sender's choice: the bytes' layout is the same.
  RoundingMode rounding = RoundingMode::kNearest;
  bool operator==(const QuantFormat&) const = default;
};

std::string_view quantization_name(Quantization q);  // "none", "int8", "int4"
// The largest code magnitude: 127 (int8) or 7 (int4).
int quantization_max_code(Quantization q);

// Where a packed range lies: elements [offset, offset + count) of a buffer
// whose tensors start at `tensor_starts` (elements from the buffer's start,
// ascending; the engine passes each unit's). Empty: the buffer is one tensor.
using TensorStarts = std::span<const uint64_t>;
struct PackedRange {
  uint64_t offset = 0;
  uint64_t count = 0;
  TensorStarts tensor_starts = {};
};
// Rank `rank`'s shard (comm/shard.h) of a buffer of `count` elements whose
// tensors start at `tensors`, as a packed range.
PackedRange shard_part(uint64_t count, int ranks, int rank, TensorStarts tensors = {});

// The blocks of a packed range: the sum over its pieces of ceil(piece / f.block).
uint64_t quantized_blocks(const PackedRange& r, QuantFormat f);
// Bytes of a packed range: 4 * quantized_blocks scales plus count (int8) or
// ceil(count / 2) (int4) bytes of codes. 0 for kNone; ShapeError for a
// block not offered (every function below sizes its bytes here, so each
// refuses one the same way).
uint64_t quantized_bytes(const PackedRange& r, QuantFormat f);
// A whole one-tensor buffer of `count` elements: 4 * ceil(count / f.block) + codes.
uint64_t quantized_bytes(uint64_t count, QuantFormat f);

// Packs `in` (fp32, fp16 or bf16; fp16/bf16 widened exactly), the elements
// of `r` (r.count == in.count), into `out`, which holds exactly
// quantized_bytes(r, f) bytes. `key` keys f.rounding's stochastic draws
// (unused when nearest). REQUIRES f.codes != kNone.
void quantize(ConstBuffer in, const PackedRange& r, QuantFormat f, std::span<std::byte> out, uint64_t key = 0);
// `in` as a whole one-tensor buffer.
void quantize(ConstBuffer in, QuantFormat f, std::span<std::byte> out, uint64_t key = 0);
// Rank `rank`'s key from a call's `key`, where each rank quantizes values of
// its own (a reduce-scatter's contributions): distinct per rank.
uint64_t key_for_rank(uint64_t key, int rank);

// Unpacks elements [first, first + out.size()) of `r` (relative to r.offset)
// packed in `packed` as `f` into fp32. REQUIRES `first` to start a block
// (or equal r.count) and first + out.size() <= r.count.
void dequantize(std::span<const std::byte> packed, const PackedRange& r, QuantFormat f, size_t first,
                std::span<float> out);
// The same for a whole one-tensor buffer of `count` elements.
void dequantize(std::span<const std::byte> packed, size_t count, QuantFormat f, size_t first, std::span<float> out);
// All `out.count` elements of `r` (r.count == out.count), rounded once to out.dtype.
void dequantize_into(std::span<const std::byte> packed, const PackedRange& r, QuantFormat f, Buffer out);
void dequantize_into(std::span<const std::byte> packed, QuantFormat f, Buffer out);

// The elements of the longest run of whole blocks of `r` that starts at
// `first` (a block start, relative to r.offset) and holds at most `most`
// elements (at least f.block, so the run holds at least one block): the
// chunks in which the reduce-scatter dequantizes and sums.
uint64_t whole_blocks(const PackedRange& r, QuantFormat f, uint64_t first, uint64_t most);

// The scratch bytes a compressed collective over a buffer of `count`
// elements whose tensors start at `tensors` (all-gather: the output;
// reduce-scatter: the input) needs on rank `rank` of `ranks`. The caller
// owns it (the engine books it in its ledger as "comm"); both backends need
// the same amount:
//   all-gather:     sum over k of Q(k)                    (every rank's packed shard)
//   reduce-scatter: 4 * (ranks + 1) * kReduceChunk        (fp32: the contributions a chunk at a time, and their sum)
//                 + sum over k of Q(k)                    (this rank's packed input, per destination)
//                 + ranks * Q(rank)                       (the contributions to this rank's shard)
// in that order (the reduce-scatter's scratch must be aligned for fp32),
// with Q(k) = quantized_bytes of shard_range(count, ranks, k). The chunk is
// at least every offered block, so a chunk holds at least one whole block
// (whole_blocks).
inline constexpr size_t kReduceChunk = kMaxQuantBlock;
uint64_t all_gather_quantized_scratch(uint64_t count, int ranks, QuantFormat f, TensorStarts tensors = {});
uint64_t reduce_scatter_quantized_scratch(uint64_t count, int ranks, int rank, QuantFormat f,
                                          TensorStarts tensors = {});
// One scratch buffer for a sequence of compressed collectives, one at a
// time, over buffers of the given counts (the engine's units; unit u's
// tensors start at tensors[u], none where tensors is shorter): the largest
// all_gather_quantized_scratch (when `gather.codes` is not kNone) and
// reduce_scatter_quantized_scratch (when `reduce.codes` is not kNone) over them.
uint64_t max_quantized_scratch(std::span<const uint64_t> counts, int ranks, int rank, QuantFormat gather,
                               QuantFormat reduce, std::span<const std::vector<uint64_t>> tensors = {});

}  // namespace zerodp::comm
