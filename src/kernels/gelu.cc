// SPDX-License-Identifier: Apache-2.0
#include "kernels/gelu.h"

#include "core/error.h"
#include "kernels/model_kernels.h"

namespace zerodp::kernels {

void gelu_forward(std::span<float> out, std::span<const float> inp) {
  ZDP_CHECK_EQ(out.size(), inp.size(), ShapeError, "[gelu] output size");
  model_kernel_set().gelu_forward(out.data(), inp.data(), inp.size());
}

void gelu_backward(std::span<float> dinp, std::span<const float> inp, std::span<const float> dout) {
  ZDP_CHECK_EQ(dinp.size(), inp.size(), ShapeError, "[gelu] input gradient size");
  ZDP_CHECK_EQ(dout.size(), inp.size(), ShapeError, "[gelu] output gradient size");
  model_kernel_set().gelu_backward(dinp.data(), inp.data(), dout.data(), inp.size());
}

}  // namespace zerodp::kernels
