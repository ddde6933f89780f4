// SPDX-License-Identifier: Apache-2.0
// Block quantization for the compressed collectives (ZeRO++'s qwZ and qgZ):
// what crosses the link when Communicator::all_gather_quantized or
// reduce_scatter_quantized is called, and the scratch those calls need.
//
// Format of `count` elements ("packed"): ceil(count / kQuantBlock) fp32
// scales, then the codes, one signed byte per element (int8) or two per
// byte (int4: element 2i in the low nibble, 2i+1 in the high one, each a
// 4-bit two's complement). Blocks start at the packed range's first
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

// Elements per scale. 256: the scale costs 4/256 = 1.6% on top of the int8
// codes (1.0156 bytes per element, 3.94x less than fp32, 1.97x less than
// bf16), an outlier spoils at most 256 neighbours' resolution, and it
// divides every chunk the reduce-scatter dequantizes at a time.
inline constexpr size_t kQuantBlock = 256;

std::string_view quantization_name(Quantization q);  // "none", "int8", "int4"
// The largest code magnitude: 127 (int8) or 7 (int4).
int quantization_max_code(Quantization q);

// Bytes of `count` packed elements: 4 * ceil(count / kQuantBlock) scales
// plus count (int8) or ceil(count / 2) (int4) bytes of codes. 0 for kNone.
uint64_t quantized_bytes(uint64_t count, Quantization q);

// Packs `in` (fp32, fp16 or bf16; fp16/bf16 widened exactly) into `out`,
// which holds exactly quantized_bytes(in.count, q) bytes. REQUIRES q != kNone.
void quantize(ConstBuffer in, Quantization q, std::span<std::byte> out);

// Unpacks elements [first, first + out.size()) of the `count` elements packed
// in `packed` into fp32. REQUIRES first % kQuantBlock == 0 and
// first + out.size() <= count.
void dequantize(std::span<const std::byte> packed, size_t count, Quantization q, size_t first, std::span<float> out);
// The same for all `out.count` elements, rounded once to out.dtype.
void dequantize_into(std::span<const std::byte> packed, Quantization q, Buffer out);

// The scratch bytes a compressed collective over a buffer of `count`
// elements (all-gather: the output; reduce-scatter: the input) needs on
// rank `rank` of `ranks`. The caller owns it (the engine books it in its
// ledger as "comm"); both backends need the same amount:
//   all-gather:     sum over k of quantized_bytes(c_k)  (every rank's packed shard)
//   reduce-scatter: 4 * (ranks + 1) * kReduceChunk      (fp32: the contributions a chunk at a time, and their sum)
//                 + sum over k of quantized_bytes(c_k)  (this rank's packed input, per destination)
//                 + ranks * quantized_bytes(c_rank)     (the contributions to this rank's shard)
// in that order (the reduce-scatter's scratch must be aligned for fp32),
// with c_k = shard_range(count, ranks, k).count.
inline constexpr size_t kReduceChunk = 8 * kQuantBlock;
uint64_t all_gather_quantized_scratch(uint64_t count, int ranks, Quantization q);
uint64_t reduce_scatter_quantized_scratch(uint64_t count, int ranks, int rank, Quantization q);
// One scratch buffer for a sequence of compressed collectives, one at a
// time, over buffers of the given counts (the engine's units): the largest
// all_gather_quantized_scratch (when `gather` is not kNone) and
// reduce_scatter_quantized_scratch (when `reduce` is not kNone) over them.
uint64_t max_quantized_scratch(std::span<const uint64_t> counts, int ranks, int rank, Quantization gather,
                               Quantization reduce);

}  // namespace zerodp::comm
