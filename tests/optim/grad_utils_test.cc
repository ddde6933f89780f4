// SPDX-License-Identifier: Apache-2.0
// Gradient helpers: sum of squares (deterministic, identical across SIMD
// paths and input dtypes), non-finite detection in every position, and the
// combined unscale/clip coefficient.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/convert.h"
#include "core/error.h"
#include "optim/grad_utils.h"
#include "test_data.h"

namespace zerodp::optim {
namespace {

using testing::low_precision_copies;
using testing::LowPrecisionCopies;
using testing::random_vector;

TEST(SumOfSquares, MatchesLongDoubleSum) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{65537}}) {
    const std::vector<float> x = random_vector(n, static_cast<uint32_t>(n));
    long double expected = 0;
    for (float v : x) expected += static_cast<long double>(v) * v;
    for (SimdLevel level : supported_simd_levels()) {
      const double got = sum_of_squares(x, level);
      EXPECT_NEAR(got, static_cast<double>(expected), 1e-12 * static_cast<double>(expected) + 1e-300)
          << "n " << n << " " << simd_level_name(level);
    }
  }
}

TEST(SumOfSquares, SimdLevelsAndDtypesGiveTheSameBits) {
  for (size_t n : {size_t{3}, size_t{31}, size_t{4096}, size_t{4099}, size_t{10007}}) {
    std::vector<float> x = random_vector(n, 99, 3.0f);
    x[n / 2] = 1e30f;  // a wide range makes rounding order visible
    const LowPrecisionCopies c = low_precision_copies(x);
    const std::vector<Half>& h = c.fp16;
    const std::vector<BFloat16>& b = c.bf16;
    const std::vector<float>&hw = c.fp16_wide, &bw = c.bf16_wide;
    const double ref = sum_of_squares(x, SimdLevel::kScalar);
    const double ref_h = sum_of_squares(hw, SimdLevel::kScalar);
    const double ref_b = sum_of_squares(bw, SimdLevel::kScalar);
    for (SimdLevel level : supported_simd_levels()) {
      SCOPED_TRACE(simd_level_name(level));
      EXPECT_EQ(sum_of_squares(x, level), ref) << n;
      EXPECT_EQ(sum_of_squares(std::span<const Half>(h), level), ref_h) << n;
      EXPECT_EQ(sum_of_squares(std::span<const BFloat16>(b), level), ref_b) << n;
    }
  }
}

TEST(SumOfSquares, OverflowingValuesGiveInfinity) {
  std::vector<float> x(40, 1.0f);
  x[33] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(sum_of_squares(x)));
  x[33] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(sum_of_squares(x)));
  // Squares of large finite floats do not overflow in double.
  x[33] = 3e38f;
  EXPECT_TRUE(std::isfinite(sum_of_squares(x)));
}

// Both ways of finding a non-finite element, at every position, level and
// dtype: has_nonfinite, and the sum of squares, from which the engine takes
// its overflow flag (zero::Engine::apply_step), so it must be finite exactly
// when every element is, even when the others are the largest finite value.
template <typename T>
void expect_detects_every_position(T bad, T good) {
  for (size_t n : {size_t{1}, size_t{16}, size_t{31}, size_t{33}, size_t{100}}) {
    for (size_t pos = 0; pos < n; ++pos) {
      std::vector<T> x(n, good);
      x[pos] = bad;
      for (SimdLevel level : supported_simd_levels()) {
        ASSERT_TRUE(has_nonfinite(std::span<const T>(x), level)) << n << " " << pos << " " << simd_level_name(level);
        ASSERT_FALSE(std::isfinite(sum_of_squares(std::span<const T>(x), level)))
            << n << " " << pos << " " << simd_level_name(level);
      }
    }
    const std::vector<T> clean(n, good);
    for (SimdLevel level : supported_simd_levels()) {
      EXPECT_FALSE(has_nonfinite(std::span<const T>(clean), level));
      EXPECT_TRUE(std::isfinite(sum_of_squares(std::span<const T>(clean), level)));
    }
  }
}

TEST(HasNonfinite, FindsInfAndNanAnywhere) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float max = std::numeric_limits<float>::max();
  expect_detects_every_position(inf, max);
  expect_detects_every_position(-inf, -max);
  expect_detects_every_position(nan, 0.0f);
  expect_detects_every_position(float_to_half(inf), float_to_half(65504.0f));
  expect_detects_every_position(float_to_half(nan), float_to_half(-1.0f));
  expect_detects_every_position(Half{0xFC00}, Half{0x7BFF});                 // -inf; largest finite
  expect_detects_every_position(float_to_bfloat16(-inf), BFloat16{0x7F7F});  // largest finite bf16
  expect_detects_every_position(float_to_bfloat16(nan), float_to_bfloat16(1.0f));
  expect_detects_every_position(nan, max);
  expect_detects_every_position(float_to_half(nan), Half{0x7BFF});
  expect_detects_every_position(float_to_bfloat16(inf), BFloat16{0x7F7F});
  expect_detects_every_position(float_to_bfloat16(nan), BFloat16{0xFF7F});  // beside the most negative
}

TEST(HasNonfinite, IgnoresElementsPastTheSpan) {
  std::vector<float> x(20, 1.0f);
  x[19] = std::numeric_limits<float>::infinity();
  for (SimdLevel level : supported_simd_levels()) {
    EXPECT_FALSE(has_nonfinite(std::span<const float>(x).first(19), level));
  }
}

TEST(Scale, MultipliesEveryElementOnce) {
  std::vector<float> x = random_vector(37, 5);
  std::vector<float> expected = x;
  for (float& v : expected) v = v * 0.3f;
  for (SimdLevel level : supported_simd_levels()) {
    std::vector<float> y = x;
    scale(y, 0.3f, level);
    EXPECT_EQ(testing::first_bit_difference(y, expected), -1);
  }
}

TEST(UnscaleAndClip, NoClipBelowTheThreshold) {
  // Scaled gradients with norm 3 * 1024 at loss scale 1024: true norm 3.
  const ClipResult r = unscale_and_clip(9.0 * 1024 * 1024, 1024.0, 5.0);
  EXPECT_DOUBLE_EQ(r.grad_norm, 3.0);
  EXPECT_FALSE(r.clipped);
  EXPECT_TRUE(r.finite);
  EXPECT_EQ(r.coefficient, 1.0f / 1024.0f);
}

TEST(UnscaleAndClip, ClipAndUnscaleInOneCoefficient) {
  const ClipResult r = unscale_and_clip(100.0 * 4.0 * 4.0, 4.0, 1.0);  // true norm 10
  EXPECT_DOUBLE_EQ(r.grad_norm, 10.0);
  EXPECT_TRUE(r.clipped);
  EXPECT_EQ(r.coefficient, static_cast<float>(0.25 * (1.0 / (10.0 + 1e-6))));
  // Applying it gives a clipped norm of max_norm (up to the 1e-6).
  EXPECT_NEAR(10.0 * 4.0 * r.coefficient, 1.0, 1e-6);
}

TEST(UnscaleAndClip, DisabledClippingOnlyUnscales) {
  const ClipResult r = unscale_and_clip(1e12, 2.0, 0.0);
  EXPECT_FALSE(r.clipped);
  EXPECT_EQ(r.coefficient, 0.5f);
}

TEST(UnscaleAndClip, NonFiniteNormIsReported) {
  const ClipResult r = unscale_and_clip(std::numeric_limits<double>::infinity(), 1.0, 1.0);
  EXPECT_FALSE(r.finite);
  EXPECT_FALSE(r.clipped);
  EXPECT_EQ(r.coefficient, 1.0f);
  EXPECT_THROW(unscale_and_clip(1.0, 0.0, 1.0), ConfigError);
}

}  // namespace
}  // namespace zerodp::optim
