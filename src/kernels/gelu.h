// SPDX-License-Identifier: Apache-2.0
// GELU with GPT-2's tanh approximation:
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Backward needs only the input. gelu_backward OVERWRITES dinp.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

// out[n] = gelu(inp[n])
void gelu_forward(std::span<float> out, std::span<const float> inp);
// dinp[n] = gelu'(inp[n]) * dout[n]
void gelu_backward(std::span<float> dinp, std::span<const float> inp, std::span<const float> dout);

}  // namespace zerodp::kernels
