// SPDX-License-Identifier: Apache-2.0
#include "zero/grad_accumulate.h"

#include <algorithm>
#include <optional>
#include <vector>

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
  // Held before x: one block per set bit of `micro`, largest first.
  std::vector<unsigned> sizes;
  for (int bit = 31; bit >= 0; --bit) {
    if ((static_cast<unsigned>(micro) >> bit) & 1u) sizes.push_back(1u << bit);
  }
  int held = static_cast<int>(sizes.size());
  std::optional<comm::Buffer> carry;  // none: x itself
  for (unsigned size = 1; held > 0 && sizes[held - 1] == size; size *= 2) {
    const comm::Buffer left = slot(held - 1);
    accumulate_into(left, carry ? comm::ConstBuffer(*carry) : x);
    carry = left;
    --held;
  }
  if (micro < count - 1) {
    if (!carry) convert_into(slot(held), x);  // waits for its sibling
    return;
  }
  comm::ConstBuffer total = carry ? comm::ConstBuffer(*carry) : x;
  for (int p = held - 1; p >= 0; --p) {
    const comm::Buffer left = slot(p);
    accumulate_into(left, total);
    total = left;
  }
}

void convert_into(comm::Buffer dst, comm::ConstBuffer src) {
  ZDP_CHECK_EQ(dst.count, src.count, ShapeError, "[convert_into] counts differ");
  convert(src.data, src.dtype, dst.data, dst.dtype, src.count);
}

}  // namespace zerodp::zero
