// SPDX-License-Identifier: Apache-2.0
// Adding one micro-batch's reduced gradient into the gradient accumulator:
// acc[i] = round(float(acc[i]) + float(x[i])) in the accumulator's dtype.
// The same function at every stage, so accumulation gives the same bits.
// Thread-safety: pure over caller-owned memory.
#pragma once

#include <functional>

#include "comm/types.h"

namespace zerodp::zero {

// REQUIRES acc.count == x.count and acc.dtype == x.dtype.
void accumulate_into(comm::Buffer acc, comm::ConstBuffer x);

// dst = src converted to dst's dtype (a copy when the dtypes agree).
void convert_into(comm::Buffer dst, comm::ConstBuffer src);

// Adds micro-batch `micro`'s reduced gradient `x` into the pairwise sum of
// micro-batches 0..count-1 (comm/reduce.h's order: a binary counter whose
// equal neighbours merge as the next arrives, folded right to left after
// the last). slot(0) is the accumulator, which micro-batch 0 wrote directly;
// slot(p), 1 <= p <= pairwise_partials(count), the partial sums: the same
// range of buffers of the same dtype. After the last micro-batch slot(0)
// holds the sum. Each addition rounds once to the dtype.
void add_pairwise(comm::ConstBuffer x, int micro, int count, const std::function<comm::Buffer(int)>& slot);

}  // namespace zerodp::zero
