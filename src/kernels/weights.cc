// SPDX-License-Identifier: Apache-2.0
#include "kernels/weights.h"

#include "core/error.h"

namespace zerodp::kernels {

std::span<const float> Weights::fp32() const {
  ZDP_CHECK(!bf16_, ConfigError, "[weights] {} bf16 weights read as fp32", size_);
  return {static_cast<const float*>(data_), size_};
}

std::span<const BFloat16> Weights::bf16() const {
  ZDP_CHECK(bf16_, ConfigError, "[weights] {} fp32 weights read as bf16", size_);
  return {static_cast<const BFloat16*>(data_), size_};
}

Weights Weights::subspan(size_t offset, size_t count) const {
  ZDP_CHECK(offset <= size_ && count <= size_ - offset, ShapeError,
            "[weights] {} values from {} past the end of {} weights", count, offset, size_);
  if (bf16_) return Weights(bf16().subspan(offset, count));
  return Weights(fp32().subspan(offset, count), kFp32Tag{});
}

}  // namespace zerodp::kernels
