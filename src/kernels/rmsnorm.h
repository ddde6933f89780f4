// SPDX-License-Identifier: Apache-2.0
// RMS normalisation over the last dimension (Llama family, Hugging Face's
// LlamaRMSNorm): out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps).
// No centring and no bias. The statistics are fp32 (a 16-lane sum of
// squares in a fixed order); forward keeps rstd per row, which is all that
// backward needs besides the input.
// Backward ACCUMULATES into dinp and dweight (+=), as layernorm_backward
// does: the residual stream's gradient is summed into dinp.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

// out[N,C], rstd[N] <- inp[N,C], weight[C]
void rmsnorm_forward(std::span<float> out, std::span<float> rstd, std::span<const float> inp,
                     std::span<const float> weight, int rows, int channels, float eps);

// dinp[N,C] +=, dweight[C] += <- dout[N,C], inp[N,C], weight[C], rstd[N]
void rmsnorm_backward(std::span<float> dinp, std::span<float> dweight, std::span<const float> dout,
                      std::span<const float> inp, std::span<const float> weight, std::span<const float> rstd, int rows,
                      int channels);

}  // namespace zerodp::kernels
