// SPDX-License-Identifier: Apache-2.0
#include "optim/grad_utils.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "optim/optim_kernels.h"

namespace zerodp::optim {
namespace {

using kernels::kSumLanes;

// 16-bit inputs are widened a block at a time; a multiple of 16, so element i
// of the whole span still meets partial sum i % 16.
constexpr size_t kWidenBlock = 4096;
static_assert(kWidenBlock % kSumLanes == 0);

void accumulate(const float* x, size_t n, double* acc, SimdLevel level) {
  kernels::kernel_set(level).sum_squares(x, n, acc);
}

// The fixed combining tree: lanes k and k + 8, then k and k + 4, k and k + 2,
// k and k + 1.
double combine(std::array<double, kSumLanes>& acc) {
  for (size_t width = kSumLanes / 2; width >= 1; width /= 2) {
    for (size_t k = 0; k < width; ++k) acc[k] = acc[k] + acc[k + width];
  }
  return acc[0];
}

template <typename T>
double sum_of_squares_16(std::span<const T> x, SimdLevel level) {
  std::array<double, kSumLanes> acc{};
  std::array<float, kWidenBlock> block;
  for (size_t at = 0; at < x.size(); at += kWidenBlock) {
    const size_t n = std::min(kWidenBlock, x.size() - at);
    convert(x.subspan(at, n), std::span<float>(block.data(), n), level);
    accumulate(block.data(), n, acc.data(), level);
  }
  return combine(acc);
}

bool nonfinite_16(const uint16_t* x, size_t n, uint16_t mask, SimdLevel level) {
  return kernels::kernel_set(level).nonfinite_u16(x, n, mask);
}

}  // namespace

double sum_of_squares(std::span<const float> x, SimdLevel level) {
  std::array<double, kSumLanes> acc{};
  accumulate(x.data(), x.size(), acc.data(), level);
  return combine(acc);
}

double sum_of_squares(std::span<const Half> x, SimdLevel level) { return sum_of_squares_16(x, level); }
double sum_of_squares(std::span<const BFloat16> x, SimdLevel level) { return sum_of_squares_16(x, level); }

bool has_nonfinite(std::span<const float> x, SimdLevel level) {
  return kernels::kernel_set(level).nonfinite_f32(x.data(), x.size());
}

bool has_nonfinite(std::span<const Half> x, SimdLevel level) {
  static_assert(sizeof(Half) == sizeof(uint16_t));
  return nonfinite_16(reinterpret_cast<const uint16_t*>(x.data()), x.size(), 0x7C00, level);
}

bool has_nonfinite(std::span<const BFloat16> x, SimdLevel level) {
  static_assert(sizeof(BFloat16) == sizeof(uint16_t));
  return nonfinite_16(reinterpret_cast<const uint16_t*>(x.data()), x.size(), 0x7F80, level);
}

void scale(std::span<float> x, float factor, SimdLevel level) {
  kernels::kernel_set(level).scale(x.data(), x.size(), factor);
}

ClipResult unscale_and_clip(double global_sum_of_squares, double loss_scale, double max_norm) {
  ZDP_CHECK(std::isfinite(loss_scale) && loss_scale > 0.0, ConfigError, "[clip] loss scale {} must be finite and > 0",
            loss_scale);
  ClipResult r;
  r.grad_norm = std::sqrt(global_sum_of_squares) / loss_scale;
  r.finite = std::isfinite(r.grad_norm);
  double clip = 1.0;
  if (max_norm > 0.0 && r.finite) {
    const double factor = max_norm / (r.grad_norm + kClipEpsilon);
    if (factor < 1.0) {
      clip = factor;
      r.clipped = true;
    }
  }
  r.coefficient = static_cast<float>((1.0 / loss_scale) * clip);
  return r;
}

}  // namespace zerodp::optim
