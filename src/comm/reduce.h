// SPDX-License-Identifier: Apache-2.0
// The local, ordered reduction every backend uses, so results are bitwise
// the same everywhere: out[i] = op(in_0[i], in_1[i], ..., in_{n-1}[i]) in fp32
// (fp16/bf16 widened exactly first), rounded once to the dtype. kSum and kAvg
// add in one canonical pairwise order: the sum of contributions [0, n) is the
// sum of the largest power-of-two prefix plus the sum of the rest, each part
// summed the same way ((x0 + x1) + (x2 + x3) for n = 4; left to right for
// n <= 3). A sum over 2^a ranks of sums over blocks of 2^b is then the same
// tree as one sum over 2^(a+b): the engine builds on that to give the same
// bits for every power-of-two N at a fixed global batch (zero/engine.h).
// kAvg divides the fp32 sum by n (a true division, not a multiply by 1/n)
// before rounding. kMax combines left to right. A sum or average
// that is NaN comes out as the canonical quiet NaN (fp32 0x7FC00000, which
// rounds to bf16 0x7FC0 and fp16 0x7E00); kMax keeps the first NaN as is.
// Thread-safety: pure functions over caller memory. An output may be the
// same elements as any input (in place); other overlaps are not allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "comm/types.h"
#include "core/simd.h"

namespace zerodp::comm {

// ins[k] points at `count` elements of `dtype`: contribution of rank k.
// REQUIRES ins.size() >= 1.
// The SIMD level only picks the instructions (core/simd.h): every level
// gives the same bits.
void reduce_ordered(std::span<const void* const> ins, void* out, size_t count, Dtype dtype, ReduceOp op,
                    SimdLevel level = active_simd_level());
// The same, with the result written to every outs[o] (the thread backend's
// all-reduce writes each rank's output at once). Each output may be exactly
// one of the inputs; outputs must not overlap each other.
// (A distinct name: an array of outputs would silently convert to void*.)
void reduce_ordered_into_all(std::span<const void* const> ins, std::span<void* const> outs, size_t count, Dtype dtype,
                             ReduceOp op, SimdLevel level = active_simd_level());

// memcpy for the collectives' copies: large copies (4 MiB and more) use
// streaming stores where the level has them. REQUIRES no overlap.
void copy_bytes(void* dst, const void* src, size_t bytes, SimdLevel level = active_simd_level());

// The same rule for one double per rank, in fp64: the pairwise sum, avg =
// sum / n, max keeps the first NaN.
double reduce_scalars(std::span<const double> values, ReduceOp op);
// The pairwise sum alone (REQUIRES !values.empty()).
double pairwise_sum(std::span<const double> values);

// The same for unsigned 64-bit integers, exactly: kSum adds in rank order,
// std::nullopt when the sum exceeds 2^64 - 1; kMax is the largest. kAvg
// has no exact integer result: std::nullopt.
std::optional<uint64_t> reduce_uint64s(std::span<const uint64_t> values, ReduceOp op);

}  // namespace zerodp::comm
