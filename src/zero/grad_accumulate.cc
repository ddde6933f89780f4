// SPDX-License-Identifier: Apache-2.0
#include "zero/grad_accumulate.h"

#include <algorithm>
#include <bit>

#include "core/convert.h"
#include "core/error.h"

namespace zerodp::zero {

void accumulate_into(comm::Buffer acc, comm::ConstBuffer x) {
  ZDP_CHECK_EQ(acc.count, x.count, ShapeError, "[accumulate] counts differ");
  ZDP_CHECK(acc.dtype == x.dtype, ShapeError, "[accumulate] dtypes differ: {} vs {}", acc.dtype.name(), x.dtype.name());
  if (acc.dtype == Dtype::fp32()) {
    float* a = static_cast<float*>(acc.data);
    const float* b = static_cast<const float*>(x.data);
    for (size_t i = 0; i < acc.count; ++i) a[i] += b[i];
    return;
  }
  // Widen a block of each, add in fp32, round once.
  constexpr size_t kBlock = 2048;
  float a[kBlock], b[kBlock];
  for (size_t done = 0; done < acc.count; done += kBlock) {
    const size_t n = std::min(kBlock, acc.count - done);
    const comm::Buffer acc_block = acc.slice(done, n);
    convert(acc_block.data, acc.dtype, a, Dtype::fp32(), n);
    convert(x.slice(done, n).data, x.dtype, b, Dtype::fp32(), n);
    for (size_t i = 0; i < n; ++i) a[i] += b[i];
    convert(a, Dtype::fp32(), acc_block.data, acc.dtype, n);
  }
}

void add_pairwise(comm::ConstBuffer x, int micro, int count, const std::function<comm::Buffer(int)>& slot) {
  ZDP_CHECK(micro >= 1 && micro < count, Error, "[accumulate] micro-batch {} of {} (0 writes the accumulator)", micro,
            count);
  // Held before x: one block per set bit of `micro`, largest first, in
  // slots 0.. . x merges with as many of the smallest as `micro` has
  // trailing one bits; the merged block then sits in the last slot it freed.
  const auto t = static_cast<unsigned>(micro);
  int held = std::popcount(t);
  const int merges = std::countr_one(t);
  comm::ConstBuffer carry = x;
  for (int i = 0; i < merges; ++i) {
    const comm::Buffer left = slot(--held);
    accumulate_into(left, carry);
    carry = left;
  }
  if (micro < count - 1) {
    if (merges == 0) convert_into(slot(held), x);  // waits for its sibling
    return;
  }
  for (int p = held - 1; p >= 0; --p) {  // the last micro-batch: fold right to left
    const comm::Buffer left = slot(p);
    accumulate_into(left, carry);
    carry = left;
  }
}

void convert_into(comm::Buffer dst, comm::ConstBuffer src) {
  ZDP_CHECK_EQ(dst.count, src.count, ShapeError, "[convert_into] counts differ");
  convert(src.data, src.dtype, dst.data, dst.dtype, src.count);
}

}  // namespace zerodp::zero
