// SPDX-License-Identifier: Apache-2.0
#include "kernels/swiglu.h"

#include "core/error.h"
#include "kernels/model_kernels.h"

namespace zerodp::kernels {

void swiglu_forward(std::span<float> out, std::span<const float> gate, std::span<const float> up) {
  ZDP_CHECK_EQ(up.size(), gate.size(), ShapeError, "[swiglu] up size");
  ZDP_CHECK_EQ(out.size(), gate.size(), ShapeError, "[swiglu] output size");
  model_kernel_set().swiglu_forward(out.data(), gate.data(), up.data(), gate.size());
}

void swiglu_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dout,
                     std::span<const float> gate, std::span<const float> up) {
  ZDP_CHECK_EQ(up.size(), gate.size(), ShapeError, "[swiglu] up size");
  ZDP_CHECK_EQ(dout.size(), gate.size(), ShapeError, "[swiglu] output gradient size");
  ZDP_CHECK_EQ(dgate.size(), gate.size(), ShapeError, "[swiglu] gate gradient size");
  ZDP_CHECK_EQ(dup.size(), gate.size(), ShapeError, "[swiglu] up gradient size");
  model_kernel_set().swiglu_backward(dgate.data(), dup.data(), dout.data(), gate.data(), up.data(), gate.size());
}

}  // namespace zerodp::kernels
