// SPDX-License-Identifier: Apache-2.0
// Adding one micro-batch's reduced gradient into the gradient accumulator:
// acc[i] = round(float(acc[i]) + float(x[i])) in the accumulator's dtype.
// The same function at every stage, so accumulation gives the same bits.
// Thread-safety: pure over caller-owned memory.
#pragma once

#include "comm/types.h"

namespace zerodp::zero {

// REQUIRES acc.count == x.count and acc.dtype == x.dtype.
void accumulate_into(comm::Buffer acc, comm::ConstBuffer x);

// dst = src converted to dst's dtype (a copy when the dtypes agree).
void convert_into(comm::Buffer dst, comm::ConstBuffer src);

}  // namespace zerodp::zero
