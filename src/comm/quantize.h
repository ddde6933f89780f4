// SPDX-License-Identifier: Apache-2.0
// Block quantization for the compressed collectives (ZeRO++'s qwZ and qgZ):
// what crosses the link when Communicator::all_gather_quantized or
// reduce_scatter_quantized is called, and the scratch those calls need.
//
// Format of `count` elements ("packed") in blocks of `block` elements
// (QuantFormat): ceil(count / block) fp32 scales, then the codes, one
// signed byte per element (int8) or two per byte (int4: element 2i in the
// low nibble, 2i+1 in the high one, each a 4-bit two's complement). Blocks start at the packed range's first
// element. Per block, symmetric absmax:
//
//   scale = absmax / qmax                         (fp32 division; qmax 127 or 7)
//   code  = clamp(nearbyint(x / scale), -qmax, qmax)   (round half to even)
//   x'    = code * scale                          (fp32, one rounding)
//
// so |x - x'| <= scale / 2 plus fp32 rounding of the division and the
// product. A block whose absmax is 0, or so small that absmax / qmax
// underflows to 0, has scale 0 and dequantizes to zeros. A block holding a
// NaN or an infinity has scale NaN (the canonical quiet NaN 0x7FC00000) and
// every one of its elements dequantizes to NaN, so a non-finite gradient
// stays non-finite after the reduction (the engine's overflow check and
// fp16 loss scaling rely on it).
//
// Scalar code only: the bits are the same at every SIMD level and on every
// backend (and the compiler may not contract: -ffp-contract=off).
// Thread-safety: pure functions over caller memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "comm/types.h"

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
// more bytes) to 2048, so that every block divides kReduceChunk below.
inline constexpr uint32_t kMinQuantBlock = 32;
inline constexpr uint32_t kMaxQuantBlock = 2048;
bool quant_block_offered(uint64_t block);

// What a compressed collective sends: the codes and the elements per scale.
struct QuantFormat {
  Quantization codes = Quantization::kNone;
  uint32_t block = kDefaultQuantBlock;
  bool operator==(const QuantFormat&) const = default;
};

std::string_view quantization_name(Quantization q);  // "none", "int8", "int4"
// The largest code magnitude: 127 (int8) or 7 (int4).
int quantization_max_code(Quantization q);

// Bytes of `count` packed elements: 4 * ceil(count / f.block) scales plus
// count (int8) or ceil(count / 2) (int4) bytes of codes. 0 for kNone;
// ShapeError for a block not offered (every function below sizes its
// bytes here, so each refuses one the same way).
uint64_t quantized_bytes(uint64_t count, QuantFormat f);

// Packs `in` (fp32, fp16 or bf16; fp16/bf16 widened exactly) into `out`,
// which holds exactly quantized_bytes(in.count, f) bytes. REQUIRES f.codes
// != kNone and quant_block_offered(f.block).
void quantize(ConstBuffer in, QuantFormat f, std::span<std::byte> out);

// Unpacks elements [first, first + out.size()) of the `count` elements packed
// in `packed` as `f` into fp32. REQUIRES first % f.block == 0 and
// first + out.size() <= count.
void dequantize(std::span<const std::byte> packed, size_t count, QuantFormat f, size_t first, std::span<float> out);
// The same for all `out.count` elements, rounded once to out.dtype.
void dequantize_into(std::span<const std::byte> packed, QuantFormat f, Buffer out);

// The scratch bytes a compressed collective over a buffer of `count`
// elements (all-gather: the output; reduce-scatter: the input) needs on
// rank `rank` of `ranks`. The caller owns it (the engine books it in its
// ledger as "comm"); both backends need the same amount:
//   all-gather:     sum over k of quantized_bytes(c_k)  (every rank's packed shard)
//   reduce-scatter: 4 * (ranks + 1) * kReduceChunk      (fp32: the contributions a chunk at a time, and their sum)
//                 + sum over k of quantized_bytes(c_k)  (this rank's packed input, per destination)
//                 + ranks * quantized_bytes(c_rank)     (the contributions to this rank's shard)
// in that order (the reduce-scatter's scratch must be aligned for fp32),
// with c_k = shard_range(count, ranks, k).count. The chunk is a multiple of
// every offered block, so a chunk never splits one.
inline constexpr size_t kReduceChunk = kMaxQuantBlock;
uint64_t all_gather_quantized_scratch(uint64_t count, int ranks, QuantFormat f);
uint64_t reduce_scatter_quantized_scratch(uint64_t count, int ranks, int rank, QuantFormat f);
// One scratch buffer for a sequence of compressed collectives, one at a
// time, over buffers of the given counts (the engine's units): the largest
// all_gather_quantized_scratch (when `gather.codes` is not kNone) and
// reduce_scatter_quantized_scratch (when `reduce.codes` is not kNone) over them.
uint64_t max_quantized_scratch(std::span<const uint64_t> counts, int ranks, int rank, QuantFormat gather,
                               QuantFormat reduce);

}  // namespace zerodp::comm
