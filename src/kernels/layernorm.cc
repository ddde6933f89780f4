// SPDX-License-Identifier: Apache-2.0
#include "kernels/layernorm.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> inp, std::span<const float> weight, std::span<const float> bias,
           std::span<const float> mean, std::span<const float> rstd, int rows, int channels) {
  ZDP_CHECK(rows >= 0 && channels > 0, ShapeError, "[layernorm] bad shape N={} C={}", rows, channels);
  ZDP_CHECK_EQ(inp.size(), size_t(rows) * channels, ShapeError, "[layernorm] input size");
  ZDP_CHECK_EQ(weight.size(), size_t(channels), ShapeError, "[layernorm] weight size");
  ZDP_CHECK_EQ(bias.size(), size_t(channels), ShapeError, "[layernorm] bias size");
  ZDP_CHECK_EQ(mean.size(), size_t(rows), ShapeError, "[layernorm] mean size");
  ZDP_CHECK_EQ(rstd.size(), size_t(rows), ShapeError, "[layernorm] rstd size");
}

}  // namespace

void layernorm_forward(std::span<float> out, std::span<float> mean, std::span<float> rstd, std::span<const float> inp,
                       std::span<const float> weight, std::span<const float> bias, int rows, int channels) {
  check(inp, weight, bias, mean, rstd, rows, channels);
  ZDP_CHECK_EQ(out.size(), inp.size(), ShapeError, "[layernorm] output size");
  const size_t c = channels;
  const float* w = weight.data();
  const float* b = bias.data();
  for (int i = 0; i < rows; ++i) {
    const float* x = inp.data() + i * c;  // [C]
    float* y = out.data() + i * c;        // [C]
    // Two passes (mean, then the centred second moment): no cancellation.
    const float m = detail::lane_sum(x, c) / channels;
    float var_acc[detail::kLanes] = {};
    size_t j = 0;
    for (; j + detail::kLanes <= c; j += detail::kLanes) {
      for (int k = 0; k < detail::kLanes; ++k) {
        const float d = x[j + k] - m;
        var_acc[k] += d * d;
      }
    }
    for (size_t k = 0; j < c; ++j, ++k) {
      const float d = x[j] - m;
      var_acc[k] += d * d;
    }
    const float var = detail::lane_sum(var_acc, detail::kLanes) / channels;
    const float s = 1.0f / std::sqrt(var + kLayerNormEps);
    for (size_t k = 0; k < c; ++k) y[k] = (x[k] - m) * s * w[k] + b[k];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward(std::span<float> dinp, std::span<float> dweight, std::span<float> dbias,
                        std::span<const float> dout, std::span<const float> inp, std::span<const float> weight,
                        std::span<const float> mean, std::span<const float> rstd, int rows, int channels) {
  check(inp, weight, dbias, mean, rstd, rows, channels);
  ZDP_CHECK_EQ(dinp.size(), inp.size(), ShapeError, "[layernorm] input gradient size");
  ZDP_CHECK_EQ(dout.size(), inp.size(), ShapeError, "[layernorm] output gradient size");
  ZDP_CHECK_EQ(dweight.size(), size_t(channels), ShapeError, "[layernorm] weight gradient size");
  const size_t c = channels;
  const float* w = weight.data();
  float* dw = dweight.data();
  float* db = dbias.data();
  for (int i = 0; i < rows; ++i) {
    const float* x = inp.data() + i * c;    // [C]
    const float* dy = dout.data() + i * c;  // [C]
    float* dx = dinp.data() + i * c;        // [C]
    const float m = mean[i];
    const float s = rstd[i];
    // dnorm = dy * w; dx = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
    float a1[detail::kLanes] = {};
    float a2[detail::kLanes] = {};
    size_t j = 0;
    for (; j + detail::kLanes <= c; j += detail::kLanes) {
      for (int k = 0; k < detail::kLanes; ++k) {
        const float norm = (x[j + k] - m) * s;
        const float dnorm = dy[j + k] * w[j + k];
        a1[k] += dnorm;
        a2[k] += dnorm * norm;
      }
    }
    for (size_t k = 0; j < c; ++j, ++k) {
      const float norm = (x[j] - m) * s;
      const float dnorm = dy[j] * w[j];
      a1[k] += dnorm;
      a2[k] += dnorm * norm;
    }
    const float dnorm_mean = detail::lane_sum(a1, detail::kLanes) / channels;
    const float dnorm_norm_mean = detail::lane_sum(a2, detail::kLanes) / channels;
    for (size_t k = 0; k < c; ++k) {
      const float norm = (x[k] - m) * s;
      const float dnorm = dy[k] * w[k];
      db[k] += dy[k];
      dw[k] += norm * dy[k];
      dx[k] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
}

}  // namespace zerodp::kernels
