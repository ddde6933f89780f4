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

}  // namespace zerodp::optim::testing
