// SPDX-License-Identifier: Apache-2.0
#include "kernels/profile.h"

namespace zerodp::kernels {

std::string_view kernel_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMatmul:
      return "matmul";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kLayerNorm:
      return "layernorm";
    case KernelKind::kGelu:
      return "gelu";
    case KernelKind::kSoftmaxXent:
      return "softmax_xent";
    case KernelKind::kEmbedding:
      return "embedding";
    case KernelKind::kResidual:
      return "residual";
    case KernelKind::kCount:
      break;
  }
  return "?";
}

double Profile::total_seconds() const {
  double s = 0;
  for (const auto& e : entries_) s += e.seconds;
  return s;
}

}  // namespace zerodp::kernels
