// The local, ordered reduction every backend uses, so results are bitwise
// the same everywhere: out[i] = op(in_0[i], in_1[i], ..., in_{n-1}[i]) with the
// contributions combined left to right in fp32 (fp16/bf16 widened exactly
// first) and rounded once to the dtype; kAvg divides the fp32 sum by n
// (a true division, not a multiply by 1/n) before rounding.
// Thread-safety: pure functions over caller memory. out may be the same
// elements as any input (in place); other overlaps are not allowed.
#pragma once

#include <cstddef>
#include <span>

#include "comm/types.h"

namespace zerodp::comm {

// ins[k] points at `count` elements of `dtype`: contribution of rank k.
// REQUIRES ins.size() >= 1.
void reduce_ordered(std::span<const void* const> ins, void* out, size_t count, Dtype dtype, ReduceOp op);

// The same rule for one double per rank, in fp64: sum in order, avg = sum / n,
// max keeps the first NaN.
double reduce_scalars(std::span<const double> values, ReduceOp op);

}  // namespace zerodp::comm
