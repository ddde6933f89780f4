// SPDX-License-Identifier: Apache-2.0
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace zerodp {
namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

TEST(Dtype, SizesNamesAndParsing) {
  EXPECT_EQ(Dtype::fp32().size(), 4u);
  EXPECT_EQ(Dtype::fp16().size(), 2u);
  EXPECT_EQ(Dtype::bf16().size(), 2u);
  EXPECT_EQ(Dtype::parse("bf16"), Dtype::bf16());
  EXPECT_EQ(Dtype::parse("float16"), Dtype::fp16());
  EXPECT_EQ(Dtype::fp16().name(), "fp16");
  EXPECT_TRUE(Dtype::bf16().is_low_precision());
  EXPECT_FALSE(Dtype::fp32().is_low_precision());
  EXPECT_THROW(Dtype::parse("fp8"), ConfigError);
  EXPECT_EQ(dtype_of<Half>(), Dtype::fp16());
}

// Users write BF16 and FP16 as often as bf16: names are case-insensitive,
// and the canonical name stays lowercase.
TEST(Dtype, ParsingIgnoresCase) {
  EXPECT_EQ(Dtype::parse("BF16"), Dtype::bf16());
  EXPECT_EQ(Dtype::parse("FP16"), Dtype::fp16());
  EXPECT_EQ(Dtype::parse("Fp32"), Dtype::fp32());
  EXPECT_EQ(Dtype::parse("BFloat16"), Dtype::bf16());
  EXPECT_EQ(Dtype::parse("BF16").name(), "bf16");
  try {
    Dtype::parse("FP8");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("'FP8'"), std::string::npos) << e.message();  // the user's spelling
  }
}

TEST(Dtype, HalfKnownValues) {
  EXPECT_EQ(float_to_half(1.0f).bits, 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f).bits, 0xC000);
  EXPECT_EQ(float_to_half(65504.0f).bits, 0x7BFF);               // largest half
  EXPECT_EQ(float_to_half(65519.99f).bits, 0x7BFF);              // rounds down
  EXPECT_EQ(float_to_half(65520.0f).bits, 0x7C00);               // tie to even: inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie to even: 0
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)).bits, 0x0001);  // 0.75 ulp rounds up
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(-0.0f).bits, 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()).bits, 0x7C00);
  // 1 + 2^-11 is a tie between 1 and 1+2^-10: even (1) wins; 1 + 3*2^-11 goes up.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3C00);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)).bits, 0x3C02);
  EXPECT_EQ(half_to_float(Half{0x0001}), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(Half{0x03FF}), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isnan(half_to_float(Half{0x7E00})));
}

TEST(Dtype, BFloat16KnownValues) {
  EXPECT_EQ(float_to_bfloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(float_to_bfloat16(bfloat16_to_float(BFloat16{0x0001})).bits, 0x0001);  // subnormal kept
  // 1 + 2^-8 is a tie: even (1.0) wins; 1 + 3*2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(3.0f, -8)).bits, 0x3F82);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()).bits, 0x7F80);  // overflow: inf
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7F800001u)).bits, 0x7FC0);  // NaN stays NaN
}

// Stochastic rounding: a bf16 value stays itself whatever the random bits;
// any other float goes to one of its two bf16 neighbours, up exactly when
// its dropped 16 bits plus the random ones carry, so over all 65,536 random
// values the mean is the float itself.
TEST(Dtype, BFloat16StochasticRoundingIsUnbiased) {
  for (const float exact : {1.0f, -3.5f, 0.0f, bfloat16_to_float(BFloat16{0x0001})}) {
    for (const uint16_t r : {uint16_t{0}, uint16_t{1}, uint16_t{0x8000}, uint16_t{0xFFFF}}) {
      EXPECT_EQ(float_to_bfloat16_stochastic(exact, r).bits, float_to_bfloat16(exact).bits) << exact << " " << r;
    }
  }
  for (const uint32_t bits : {0x3F800001u, 0x3F80C000u, 0xBF80FFFFu, 0x00001234u, 0x42F6E979u}) {
    const float x = std::bit_cast<float>(bits);
    const uint16_t below = static_cast<uint16_t>(bits >> 16), above = static_cast<uint16_t>(below + 1);
    double sum = 0.0;
    uint32_t ups = 0;
    for (uint32_t r = 0; r < 65536; ++r) {
      const BFloat16 b = float_to_bfloat16_stochastic(x, static_cast<uint16_t>(r));
      ASSERT_TRUE(b.bits == below || b.bits == above) << std::hex << bits << " " << r;
      ups += b.bits == above ? 1 : 0;
      sum += static_cast<double>(bfloat16_to_float(b));
    }
    EXPECT_EQ(ups, bits & 0xFFFFu) << std::hex << bits;  // P(up) = dropped / 2^16, exactly
    EXPECT_DOUBLE_EQ(sum / 65536.0, static_cast<double>(x)) << std::hex << bits;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_bfloat16_stochastic(inf, 0xFFFF).bits, 0x7F80);
  EXPECT_EQ(float_to_bfloat16_stochastic(-inf, 0xFFFF).bits, 0xFF80);
  EXPECT_EQ(float_to_bfloat16_stochastic(std::bit_cast<float>(0x7F800001u), 0xFFFF).bits, 0x7FC0);  // NaN stays NaN
  // Within an ulp of the largest finite bf16: up is infinity, as often as its share says.
  EXPECT_EQ(float_to_bfloat16_stochastic(std::numeric_limits<float>::max(), 0x0001).bits, 0x7F80);
  EXPECT_EQ(float_to_bfloat16_stochastic(std::numeric_limits<float>::max(), 0x0000).bits, 0x7F7F);
}

// Every one of the 65,536 half patterns: numbers round-trip exactly; NaNs
// round-trip with the quiet bit set and sign and payload kept.
TEST(Dtype, EveryHalfPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h{static_cast<uint16_t>(b)};
    const float f = half_to_float(h);
    const bool nan = (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0;
    const uint16_t expected = nan ? static_cast<uint16_t>(b | 0x0200) : static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_half(f).bits, expected) << std::hex << b;
    if (!nan) {
      // The float value equals the half's exact value, computed independently.
      const int e = (b >> 10) & 0x1F;
      const int m = b & 0x3FF;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
      if (b & 0x8000) v = -v;
      ASSERT_EQ(static_cast<double>(f), v) << std::hex << b;
    }
  }
}

TEST(Dtype, EveryBFloat16PatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const BFloat16 h{static_cast<uint16_t>(b)};
    const float f = bfloat16_to_float(h);
    const bool nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    const uint16_t expected = nan ? static_cast<uint16_t>(b | 0x0040) : static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_bfloat16(f).bits, expected) << std::hex << b;
    if (!nan) {
      ASSERT_EQ(bits_of(f), b << 16);
    }
  }
}

// Rounding against an independent computation in double: the nearest
// representable value, ties to the even significand.
TEST(Dtype, HalfRoundingMatchesExactArithmetic) {
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    // Magnitudes from 2^-26 to 2^17 cover subnormal, normal and overflow.
    const float f = std::ldexp(1.0f + (state >> 8) * 0x1p-24f, static_cast<int>(state % 44) - 26);
    const uint16_t h = float_to_half(f).bits;
    const double exact = f;
    if (exact >= 65520.0) {
      ASSERT_EQ(h, 0x7C00);
      continue;
    }
    const double got = half_to_float(Half{h});
    // Neighbours of the result: nothing representable is closer.
    const double up = half_to_float(Half{static_cast<uint16_t>(h + 1)});
    const double down = h == 0 ? 0.0 : static_cast<double>(half_to_float(Half{static_cast<uint16_t>(h - 1)}));
    ASSERT_LE(std::abs(got - exact), std::abs(up - exact)) << f;
    ASSERT_LE(std::abs(got - exact), std::abs(down - exact)) << f;
    if (std::abs(got - exact) == std::abs(up - exact)) {
      ASSERT_EQ(h % 2, 0) << f;
    }
  }
}

}  // namespace
}  // namespace zerodp
