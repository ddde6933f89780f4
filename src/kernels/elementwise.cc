// SPDX-License-Identifier: Apache-2.0
#include "kernels/elementwise.h"

#include <cstddef>

#include "core/error.h"

namespace zerodp::kernels {

void residual_forward(std::span<float> out, std::span<const float> a, std::span<const float> b) {
  ZDP_CHECK_EQ(a.size(), b.size(), ShapeError, "[residual] input sizes");
  ZDP_CHECK_EQ(out.size(), a.size(), ShapeError, "[residual] output size");
  const float* __restrict x = a.data();
  const float* __restrict y = b.data();
  float* __restrict o = out.data();
  for (size_t i = 0; i < a.size(); ++i) o[i] = x[i] + y[i];
}

void accumulate(std::span<float> acc, std::span<const float> x) {
  ZDP_CHECK_EQ(acc.size(), x.size(), ShapeError, "[accumulate] sizes");
  float* __restrict a = acc.data();
  const float* __restrict b = x.data();
  for (size_t i = 0; i < x.size(); ++i) a[i] += b[i];
}

float mse_forward(std::span<const float> pred, std::span<const float> target) {
  ZDP_CHECK_EQ(pred.size(), target.size(), ShapeError, "[mse] prediction and target sizes");
  double total = 0.0;
  for (size_t i = 0; i < pred.size(); ++i) {
    const double d = double(pred[i]) - target[i];
    total += d * d;
  }
  return pred.empty() ? 0.0f : static_cast<float>(total / pred.size());
}

void mse_backward(std::span<float> dpred, std::span<const float> pred, std::span<const float> target, float dloss) {
  ZDP_CHECK_EQ(pred.size(), target.size(), ShapeError, "[mse] prediction and target sizes");
  ZDP_CHECK_EQ(dpred.size(), pred.size(), ShapeError, "[mse] gradient size");
  const float k = 2.0f * dloss / static_cast<float>(pred.size());
  for (size_t i = 0; i < pred.size(); ++i) dpred[i] = k * (pred[i] - target[i]);
}

}  // namespace zerodp::kernels
