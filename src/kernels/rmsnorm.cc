// SPDX-License-Identifier: Apache-2.0
#include "kernels/rmsnorm.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> inp, std::span<const float> weight, std::span<const float> rstd, int rows,
           int channels) {
  ZDP_CHECK(rows >= 0 && channels > 0, ShapeError, "[rmsnorm] bad shape N={} C={}", rows, channels);
  ZDP_CHECK_EQ(inp.size(), size_t(rows) * channels, ShapeError, "[rmsnorm] input size");
  ZDP_CHECK_EQ(weight.size(), size_t(channels), ShapeError, "[rmsnorm] weight size");
  ZDP_CHECK_EQ(rstd.size(), size_t(rows), ShapeError, "[rmsnorm] rstd size");
}

}  // namespace

void rmsnorm_forward(std::span<float> out, std::span<float> rstd, std::span<const float> inp,
                     std::span<const float> weight, int rows, int channels, float eps) {
  check(inp, weight, rstd, rows, channels);
  ZDP_CHECK_EQ(out.size(), inp.size(), ShapeError, "[rmsnorm] output size");
  ZDP_CHECK(eps >= 0.0f, ShapeError, "[rmsnorm] eps {} is negative", eps);
  const size_t c = channels;
  const float* w = weight.data();
  for (int i = 0; i < rows; ++i) {
    const float* x = inp.data() + i * c;  // [C]
    float* y = out.data() + i * c;        // [C]
    const float ms = detail::lane_dot(x, x, c) / channels;
    const float s = 1.0f / std::sqrt(ms + eps);
    // (x * rstd) * w, in Hugging Face's order
    for (size_t k = 0; k < c; ++k) y[k] = (x[k] * s) * w[k];
    rstd[i] = s;
  }
}

void rmsnorm_backward(std::span<float> dinp, std::span<float> dweight, std::span<const float> dout,
                      std::span<const float> inp, std::span<const float> weight, std::span<const float> rstd, int rows,
                      int channels) {
  check(inp, weight, rstd, rows, channels);
  ZDP_CHECK_EQ(dinp.size(), inp.size(), ShapeError, "[rmsnorm] input gradient size");
  ZDP_CHECK_EQ(dout.size(), inp.size(), ShapeError, "[rmsnorm] output gradient size");
  ZDP_CHECK_EQ(dweight.size(), size_t(channels), ShapeError, "[rmsnorm] weight gradient size");
  const size_t c = channels;
  const float* w = weight.data();
  float* dw = dweight.data();
  for (int i = 0; i < rows; ++i) {
    const float* x = inp.data() + i * c;    // [C]
    const float* dy = dout.data() + i * c;  // [C]
    float* dx = dinp.data() + i * c;        // [C]
    const float s = rstd[i];
    // norm = x s, dnorm = dy w. d(rstd)/dx_k = -s^3 x_k / C, so
    //   dx = s (dnorm - norm mean(dnorm norm))
    float acc[detail::kLanes] = {};
    size_t j = 0;
    for (; j + detail::kLanes <= c; j += detail::kLanes) {
      for (int k = 0; k < detail::kLanes; ++k) acc[k] += (dy[j + k] * w[j + k]) * (x[j + k] * s);
    }
    for (size_t k = 0; j < c; ++j, ++k) acc[k] += (dy[j] * w[j]) * (x[j] * s);
    const float dnorm_norm_mean = detail::lane_sum(acc, detail::kLanes) / channels;
    for (size_t k = 0; k < c; ++k) {
      const float norm = x[k] * s;
      dw[k] += norm * dy[k];
      dx[k] += s * (dy[k] * w[k] - norm * dnorm_norm_mean);
    }
  }
}

}  // namespace zerodp::kernels
