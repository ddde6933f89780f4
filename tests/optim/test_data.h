// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the optimizer tests: reproducible random vectors and
// bitwise comparison.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/convert.h"
#include "optim/optimizer.h"

namespace zerodp::optim::testing {

inline std::vector<float> random_vector(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Index of the first element whose bits differ, or -1.
inline int64_t first_bit_difference(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

// Shard cuts for the shard/SIMD-level tests of an optimizer over 1031
// elements: none, halves, tiny first shards, uneven ones.
inline const std::vector<std::vector<size_t>>& shard_cuts() {
  static const std::vector<std::vector<size_t>> cuts = {{}, {516}, {1, 2, 3}, {100, 250, 251, 999}, {17, 344, 687}};
  return cuts;
}

// Three steps of `config` over fp16 and bf16 gradients give bitwise the
// parameters of three steps over their exact fp32 widening (a low-precision
// gradient is widened once, exactly, and nothing else).
// `x` rounded to fp16 and to bf16, and those widened back to fp32 (exact).
struct LowPrecisionCopies {
  std::vector<Half> fp16;
  std::vector<BFloat16> bf16;
  std::vector<float> fp16_wide, bf16_wide;
};
inline LowPrecisionCopies low_precision_copies(std::span<const float> x) {
  LowPrecisionCopies c{std::vector<Half>(x.size()), std::vector<BFloat16>(x.size()), std::vector<float>(x.size()),
                       std::vector<float>(x.size())};
  convert(x, std::span<Half>(c.fp16));
  convert(x, std::span<BFloat16>(c.bf16));
  convert(std::span<const Half>(c.fp16), std::span<float>(c.fp16_wide));
  convert(std::span<const BFloat16>(c.bf16), std::span<float>(c.bf16_wide));
  return c;
}

inline void expect_low_precision_grads_equal_their_widening(const OptimizerConfig& config) {
  constexpr size_t kN = 9000;  // spans more than one widening block
  const std::vector<float> g32 = random_vector(kN, 3);
  const LowPrecisionCopies g = low_precision_copies(g32);
  auto run = [&](auto grads) {
    std::vector<float> params = random_vector(kN, 4);
    auto opt = make_optimizer(config, kN, {.no_decay = {{4000, 200}}});
    for (int t = 0; t < 3; ++t) opt->step(params, grads, 1e-3, 0.25f);
    return params;
  };
  EXPECT_EQ(first_bit_difference(run(std::span<const Half>(g.fp16)), run(std::span<const float>(g.fp16_wide))), -1);
  EXPECT_EQ(first_bit_difference(run(std::span<const BFloat16>(g.bf16)), run(std::span<const float>(g.bf16_wide))), -1);
}

}  // namespace zerodp::optim::testing
