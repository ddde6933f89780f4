// SPDX-License-Identifier: Apache-2.0
// SwiGLU, the Llama family's MLP gate (element-wise):
//   out = silu(gate) * up,  silu(x) = x * sigmoid(x) = x / (1 + e^-x)
// gate and up are the outputs of gate_proj and up_proj ([N, F] each, any
// shape: the kernel is element-wise). sigmoid goes through vec_math.h's
// fast_exp (2 ulp), and the loops run at every SIMD level with the same
// bits (model_kernels.h). Backward needs only the inputs and OVERWRITES
// dgate and dup:
//   dup   = dout * silu(gate)
//   dgate = dout * up * sigmoid(gate) * (1 + gate * (1 - sigmoid(gate)))
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

// out[n] <- gate[n], up[n]
void swiglu_forward(std::span<float> out, std::span<const float> gate, std::span<const float> up);

// dgate[n] =, dup[n] = <- dout[n], gate[n], up[n]
void swiglu_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dout,
                     std::span<const float> gate, std::span<const float> up);

}  // namespace zerodp::kernels
