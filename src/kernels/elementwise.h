// SPDX-License-Identifier: Apache-2.0
// Small element-wise kernels: residual add, in-place accumulate and the MLP's
// mean-squared-error loss.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

// out[n] = a[n] + b[n]   (residual connection; backward is a pass-through)
void residual_forward(std::span<float> out, std::span<const float> a, std::span<const float> b);

// acc[n] += x[n]
void accumulate(std::span<float> acc, std::span<const float> x);

// loss = mean over all elements of (pred - target)^2 (PyTorch's MSELoss).
float mse_forward(std::span<const float> pred, std::span<const float> target);
// dpred[n] = 2 (pred - target) / n * dloss  (overwrites)
void mse_backward(std::span<float> dpred, std::span<const float> pred, std::span<const float> target, float dloss);

}  // namespace zerodp::kernels
