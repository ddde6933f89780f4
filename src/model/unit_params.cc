// SPDX-License-Identifier: Apache-2.0
#include "model/unit_params.h"

#include "core/convert.h"
#include "core/error.h"

namespace zerodp::model {
namespace {

void check_range(size_t offset, size_t count, size_t size) {
  ZDP_CHECK(offset <= size && count <= size - offset, ShapeError,
            "[model] parameters [{}, {}) lie past the unit's {} elements", offset, offset + count, size);
}

}  // namespace

kernels::Weights UnitParams::matrix(size_t offset, size_t count) const {
  check_range(offset, count, size());
  if (is_bf16()) return kernels::Weights(bf16_.subspan(offset, count));
  return kernels::Weights(fp32_.subspan(offset, count));
}

std::span<const float> UnitParams::vector(size_t offset, size_t count) {
  check_range(offset, count, size());
  if (!is_bf16()) return fp32_.subspan(offset, count);
  ZDP_CHECK(count <= widened_.size() - used_, ShapeError,
            "[model] {} more parameters widened to fp32, but the op's scratch has {} of {} floats left", count,
            widened_.size() - used_, widened_.size());
  const std::span<float> out = widened_.subspan(used_, count);
  convert(bf16_.subspan(offset, count), out);
  used_ += count;
  return out;
}

std::span<const float> UnitParams::fp32() const {
  ZDP_CHECK(!is_bf16(), ConfigError, "[model] this op reads bf16 parameters in place, not fp32");
  return fp32_;
}

std::span<const BFloat16> UnitParams::bf16() const {
  ZDP_CHECK(is_bf16(), ConfigError, "[model] this op reads fp32 parameters, not bf16 ones");
  return bf16_;
}

}  // namespace zerodp::model
