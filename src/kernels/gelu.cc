// SPDX-License-Identifier: Apache-2.0
#include "kernels/gelu.h"

#include "core/error.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCube = 0.044715f;
}  // namespace

void gelu_forward(std::span<float> out, std::span<const float> inp) {
  ZDP_CHECK_EQ(out.size(), inp.size(), ShapeError, "[gelu] output size");
  const float* __restrict x = inp.data();
  float* __restrict y = out.data();
  const size_t n = inp.size();
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCube * v * v * v);
    y[i] = 0.5f * v * (1.0f + detail::fast_tanh(u));
  }
}

void gelu_backward(std::span<float> dinp, std::span<const float> inp, std::span<const float> dout) {
  ZDP_CHECK_EQ(dinp.size(), inp.size(), ShapeError, "[gelu] input gradient size");
  ZDP_CHECK_EQ(dout.size(), inp.size(), ShapeError, "[gelu] output gradient size");
  const float* __restrict x = inp.data();
  const float* __restrict dy = dout.data();
  float* __restrict dx = dinp.data();
  const size_t n = inp.size();
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCube * v * v * v);
    const float t = detail::fast_tanh(u);
    // d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) du/dx, du/dx = sqrt(2/pi) (1 + 3 c x^2)
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCube * v * v);
    const float local = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
    dx[i] = local * dy[i];
  }
}

}  // namespace zerodp::kernels
