// SPDX-License-Identifier: Apache-2.0
// Accuracy of the vectorisable exp / tanh used by softmax and GELU.
#include "kernels/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace zerodp::kernels::detail {
namespace {

TEST(VecMath, ExpWithinFourUlpOfLibm) {
  double worst = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.0173f) {
    const double want = std::exp(double(x));
    const double rel = std::abs(fast_exp(x) - want) / want;
    worst = std::max(worst, rel);
  }
  EXPECT_LT(worst, 4.8e-7);  // 4 ulp of fp32
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_LT(fast_exp(-1000.0f), 1e-37f);
  EXPECT_TRUE(std::isfinite(fast_exp(1000.0f)));
}

TEST(VecMath, TanhAbsoluteErrorBelow3e7) {
  double worst = 0;
  for (float x = -12.0f; x <= 12.0f; x += 0.00137f) {
    worst = std::max(worst, std::abs(double(fast_tanh(x)) - std::tanh(double(x))));
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(fast_tanh(50.0f), 1.0f);
  EXPECT_EQ(fast_tanh(-50.0f), -1.0f);
}

TEST(VecMath, LaneReductions) {
  float x[37];
  for (int i = 0; i < 37; ++i) x[i] = float(i) - 10.0f;
  EXPECT_EQ(lane_sum(x, 37), 296.0f);  // sum_{i<37} i - 370
  EXPECT_EQ(lane_max(x, 37), 26.0f);
  EXPECT_EQ(lane_dot(x, x, 3), 100.0f + 81.0f + 64.0f);
}

}  // namespace
}  // namespace zerodp::kernels::detail
