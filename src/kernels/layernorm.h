// SPDX-License-Identifier: Apache-2.0
// Layer normalisation over the last dimension (eps 1e-5, as GPT-2):
// out = (x - mean) * rstd * weight + bias. Forward keeps mean and rstd per
// row, which is all backward needs besides the input.
// Backward ACCUMULATES into dinp, dweight and dbias (+=).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

inline constexpr float kLayerNormEps = 1e-5f;

// out[N,C], mean[N], rstd[N] <- inp[N,C], weight[C], bias[C]
void layernorm_forward(std::span<float> out, std::span<float> mean, std::span<float> rstd, std::span<const float> inp,
                       std::span<const float> weight, std::span<const float> bias, int rows, int channels);

// dinp[N,C] +=, dweight[C] +=, dbias[C] += <- dout[N,C], inp[N,C], weight[C], mean[N], rstd[N]
void layernorm_backward(std::span<float> dinp, std::span<float> dweight, std::span<float> dbias,
                        std::span<const float> dout, std::span<const float> inp, std::span<const float> weight,
                        std::span<const float> mean, std::span<const float> rstd, int rows, int channels);

}  // namespace zerodp::kernels
