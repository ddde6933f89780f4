// SPDX-License-Identifier: Apache-2.0
// gemm_bf16(): its defined sum (gemm_bf16.h) against a naive loop over the
// same step, at every SIMD level, for every transpose, edge size, alpha and
// beta, across every edge of its blocking (its own and small ones); the
// step's flush-to-zero cases; the hardware (where the CPU has bf16
// units) against the portable steps on values built to hit those cases;
// closeness to the fp32 product; and threads calling it at once.
#include "kernels/gemm_bf16.h"
#include "gemm_bf16_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/convert.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/compute.h"
#include "kernels/gemm_bf16_kernels.h"
#include "support/same_bits.h"
#include "support/simd_levels.h"

namespace zerodp::kernels {
namespace {

using bf16_gemm::bf16_dot_step;
using bf16_gemm::operand_bits;

using ::zerodp::testing::same_bits;

// The kernel's operand: an fp32 subnormal reads as zero, else bf16 nearest even.
float operand(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL) return std::copysign(0.0f, x);
  return bfloat16_to_float(float_to_bfloat16(x));
}

// gemm_bf16.h's definition, written out: one element at a time.
std::vector<float> defined(Trans ta, Trans tb, int m, int n, int k, float alpha, const std::vector<float>& a,
                           const std::vector<float>& b, float beta, const std::vector<float>& c0) {
  std::vector<float> c(c0);
  const auto at_a = [&](int i, int p) {
    if (p >= k) return 0.0f;
    return operand(ta == Trans::kNo ? a[size_t(i) * k + p] : a[size_t(p) * m + i]);
  };
  const auto at_b = [&](int p, int j) {
    if (p >= k) return 0.0f;
    return operand(tb == Trans::kNo ? b[size_t(p) * n + j] : b[size_t(j) * k + p]);
  };
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int p = 0; p < k; p += 2) {
        acc = bf16_dot_step(acc, at_a(i, p + 1), at_b(p + 1, j));
        acc = bf16_dot_step(acc, at_a(i, p), at_b(p, j));
      }
      float& out = c[size_t(i) * n + j];
      const float scaled = alpha == 1.0f ? acc : alpha * acc;
      out = beta == 0.0f ? scaled : scaled + (beta == 1.0f ? out : beta * out);
    }
  }
  return c;
}

// Values of every magnitude class: ordinary, tiny normal, subnormal, zero.
std::vector<float> hard_values(size_t n, uint32_t seed, bool tiny) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) {
    const uint32_t kind = gen() % 16;
    if (tiny && kind == 0) {
      x = mantissa(gen) * 0x1p-126f;  // around fp32's smallest normal: subnormal bf16 or not
    } else if (tiny && kind == 1) {
      x = mantissa(gen) * std::ldexp(1.0f, -100 - static_cast<int>(gen() % 26));  // products below 2^-126
    } else if (kind == 2) {
      x = 0.0f;
    } else {
      x = mantissa(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 9) - 4);
    }
  }
  return v;
}

using gemm_bf16_cases::kAlphaBeta;
using gemm_bf16_cases::Shape;

class GemmBf16 : public zerodp::testing::AtEverySimdLevel {};
INSTANTIATE_AT_EVERY_SIMD_LEVEL(GemmBf16);

TEST_P(GemmBf16, EveryTransposeEdgeAlphaAndBetaGiveTheDefinedSum) {
  for (const Shape s : {Shape{1, 1, 1}, Shape{9, 33, 7}, Shape{8, 32, 64}, Shape{70, 65, 3}, Shape{17, 100, 130}}) {
    for (Trans ta : {Trans::kNo, Trans::kYes}) {
      for (Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}, std::pair{-1.5f, 0.25f}}) {
          const auto seed = static_cast<uint32_t>(s.m * 131 + s.n * 7 + s.k);
          const std::vector<float> a = hard_values(size_t(s.m) * s.k, seed, true);
          const std::vector<float> b = hard_values(size_t(s.k) * s.n, seed + 1, true);
          const std::vector<float> c0 = hard_values(size_t(s.m) * s.n, seed + 2, false);
          std::vector<float> c(c0);
          gemm_bf16(ta, tb, s.m, s.n, s.k, alpha, a.data(), ta == Trans::kNo ? s.k : s.m, b.data(),
                    tb == Trans::kNo ? s.n : s.k, beta, c.data(), s.n);
          EXPECT_TRUE(same_bits(c, defined(ta, tb, s.m, s.n, s.k, alpha, a, b, beta, c0)))
              << s.m << "x" << s.n << "x" << s.k << " ta=" << int(ta) << " tb=" << int(tb) << " alpha=" << alpha;
        }
      }
    }
  }
}

TEST_P(GemmBf16, BetaZeroReadsNoC) {
  const std::vector<float> a = hard_values(5 * 6, 1, false), b = hard_values(6 * 3, 2, false);
  std::vector<float> c(5 * 3, std::nanf(""));
  gemm_bf16(Trans::kNo, Trans::kNo, 5, 3, 6, 1.0f, a.data(), 6, b.data(), 3, 0.0f, c.data(), 3);
  for (float x : c) EXPECT_FALSE(std::isnan(x));
}

// One product through gemm_blocked() (or gemm_bf16() when `blocking` is
// null) into C rows of ldc = n + 3, against the definition: the n columns
// bit for bit, the 3 past them untouched.
::testing::AssertionResult gives_the_defined_sum(Trans ta, Trans tb, Shape s, float alpha, float beta,
                                                 const bf16_gemm::Blocking* blocking, SimdLevel level) {
  const auto seed = static_cast<uint32_t>(s.m * 131 + s.n * 7 + s.k);
  const std::vector<float> a = hard_values(size_t(s.m) * s.k, seed, true);
  const std::vector<float> b = hard_values(size_t(s.k) * s.n, seed + 1, true);
  const std::vector<float> c0 = hard_values(size_t(s.m) * s.n, seed + 2, false);
  const int ldc = s.n + 3;
  std::vector<float> c(size_t(s.m) * ldc, 7.0f);
  for (int i = 0; i < s.m; ++i) std::copy_n(c0.begin() + ptrdiff_t(i) * s.n, s.n, c.begin() + ptrdiff_t(i) * ldc);
  const int lda = ta == Trans::kNo ? s.k : s.m, ldb = tb == Trans::kNo ? s.n : s.k;
  if (blocking != nullptr) {
    bf16_gemm::gemm_blocked(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc, level,
                            *blocking);
  } else {
    gemm_bf16(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc, level);
  }
  std::vector<float> got(size_t(s.m) * s.n);
  bool padding_kept = true;
  for (int i = 0; i < s.m; ++i) {
    std::copy_n(c.begin() + ptrdiff_t(i) * ldc, s.n, got.begin() + ptrdiff_t(i) * s.n);
    for (int j = s.n; j < ldc; ++j) padding_kept = padding_kept && c[size_t(i) * ldc + j] == 7.0f;
  }
  const auto what = [&] {
    return ::testing::Message() << s.m << "x" << s.n << "x" << s.k << " ta=" << int(ta) << " tb=" << int(tb)
                                << " alpha=" << alpha << " beta=" << beta;
  };
  if (!padding_kept) return ::testing::AssertionFailure() << "wrote past n: " << what();
  if (!same_bits(got, defined(ta, tb, s.m, s.n, s.k, alpha, a, b, beta, c0))) {
    return ::testing::AssertionFailure() << "not the defined sum: " << what();
  }
  return ::testing::AssertionSuccess();
}

TEST_P(GemmBf16, SmallBlocksCrossEveryEdgeOfTheBlockingAndGiveTheDefinedSum) {
  gemm_bf16_cases::for_each_block_edge(
      [&](Trans ta, Trans tb, Shape s, float alpha, float beta, const bf16_gemm::Blocking& blocking) {
        EXPECT_TRUE(gives_the_defined_sum(ta, tb, s, alpha, beta, &blocking, GetParam()));
      });
}

TEST_P(GemmBf16, ProductsOverSeveralBlocksOfEveryDimensionGiveTheDefinedSum) {
  // gemm_bf16.cc's blocks: 512 pairs of k, 1024 columns, 192 rows. k = 2055
  // makes 3 blocks of k (352, 352 and 324 pairs, the last ending on an even
  // element alone), the sums carried in C (beta = 0) or in the buffer;
  // 2093 columns 3 blocks, the last tile 13 wide; 391 rows 3 blocks, the
  // last tile 7 rows.
  for (const Shape s : {Shape{13, 37, 2055}, Shape{14, 2093, 9}, Shape{391, 40, 30}}) {
    for (Trans ta : {Trans::kNo, Trans::kYes}) {
      for (Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const auto& [alpha, beta] : kAlphaBeta) {
          EXPECT_TRUE(gives_the_defined_sum(ta, tb, s, alpha, beta, nullptr, GetParam()));
        }
      }
    }
  }
}

TEST_P(GemmBf16, BetaZeroReadsNoCOverSeveralBlocksOfK) {
  // The running sums go through C between blocks of k: what it held before
  // (NaN here) never reaches them.
  const int m = 13, n = 40, k = 1100;
  const std::vector<float> a = hard_values(size_t(m) * k, 11, false), b = hard_values(size_t(k) * n, 12, false);
  std::vector<float> c(size_t(m) * n, std::nanf(""));
  gemm_bf16(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  EXPECT_TRUE(same_bits(c, defined(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a, b, 0.0f, c)));
  const bf16_gemm::Blocking small{16, 64, 24, 24 * 64};
  std::fill(c.begin(), c.end(), std::nanf(""));
  bf16_gemm::gemm_blocked(Trans::kNo, Trans::kNo, m, n, k, -2.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n,
                          GetParam(), small);
  EXPECT_TRUE(same_bits(c, defined(Trans::kNo, Trans::kNo, m, n, k, -2.0f, a, b, 0.0f, c)));
}

TEST(GemmBf16Step, OperandsAreTheHardwaresConversion) {
  EXPECT_EQ(operand_bits(1.0f), 0x3F80);
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // a tie: to even
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x007FFFFFu)), 0x0000);  // fp32 subnormal: zero, not 2^-126
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x807FFFFFu)), 0x8000);
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x7F800001u)), 0x7FC0);  // a NaN, quieted
  EXPECT_EQ(operand_bits(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // rounds to infinity
}

// A tensor kept as its bf16 operands and widened back gives the product
// the same bits as the fp32 tensor, where a plain bf16 conversion (core's,
// which keeps subnormals) would not: 0x007FFFFF rounds to 2^-126 there.
TEST(GemmBf16Step, KeptOperandsWidenToValuesTheProductReadsUnchanged) {
  const std::vector<float> a = {1.0f,
                                std::bit_cast<float>(0x3F808000u),
                                std::bit_cast<float>(0x007FFFFFu),
                                std::bit_cast<float>(0x807FFFFFu),
                                0x1.fffffep-1f,
                                -3.3f,
                                1e-30f};
  const int k = static_cast<int>(a.size());
  // The subnormal's weight makes 2^-126 count 1.0 in the sum.
  std::vector<float> b(a.size(), 0.5f);
  b[2] = 0x1p126f;
  std::vector<BFloat16> kept(a.size());
  round_to_bf16_operands(a, kept);
  std::vector<float> widened(a.size());
  convert(std::span<const BFloat16>(kept), std::span<float>(widened));
  EXPECT_EQ(kept[2].bits, 0x0000);
  for (const SimdLevel level : supported_simd_levels()) {
    float direct = 0.0f, from_kept = 0.0f;
    gemm_bf16(Trans::kNo, Trans::kNo, 1, 1, k, 1.0f, a.data(), k, b.data(), 1, 0.0f, &direct, 1, level);
    gemm_bf16(Trans::kNo, Trans::kNo, 1, 1, k, 1.0f, widened.data(), k, b.data(), 1, 0.0f, &from_kept, 1, level);
    EXPECT_EQ(std::bit_cast<uint32_t>(direct), std::bit_cast<uint32_t>(from_kept)) << simd_level_name(level);
    // What the operand rounding is for: core's conversion keeps the
    // subnormal, rounded up to 2^-126, which the product then reads.
    std::vector<BFloat16> plain(a.size());
    convert(std::span<const float>(a), std::span<BFloat16>(plain));
    convert(std::span<const BFloat16>(plain), std::span<float>(widened));
    float from_plain = 0.0f;
    gemm_bf16(Trans::kNo, Trans::kNo, 1, 1, k, 1.0f, widened.data(), k, b.data(), 1, 0.0f, &from_plain, 1, level);
    EXPECT_NE(direct, from_plain) << simd_level_name(level);
    convert(std::span<const BFloat16>(kept), std::span<float>(widened));
  }
  EXPECT_THROW(round_to_bf16_operands(a, std::span<BFloat16>(kept).first(3)), ShapeError);
}

TEST(GemmBf16Step, FlushesResultsTinyAfterRounding) {
  // 2^-126 less 0.88 of an ulp at 24 bits below it: rounds below 2^-126, so zero.
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_dot_step(0x1p-126f, 0x1.54p-25f, -0x1.52p-126f)), 0u);
  // 2^-126 less 0.3 of that ulp: rounds back to 2^-126, kept.
  EXPECT_EQ(bf16_dot_step(0x1p-126f, 0x1.a8p-27f, -0x1.6ep-126f), 0x1p-126f);
  // A sum that is subnormal: a zero of its sign.
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_dot_step(-0x1p-127f * 0.0f, -0x1p-70f, 0x1p-70f)), 0x80000000u);
  EXPECT_EQ(bf16_dot_step(1.0f, 0x1p-12f, 0x1p-12f), 1.0f);  // below half an ulp of 1: nearest even
  EXPECT_EQ(bf16_dot_step(1.0f, 3.0f, 0.5f), 2.5f);
  EXPECT_TRUE(std::isnan(bf16_dot_step(1.0f, std::nanf(""), 1.0f)));
  EXPECT_TRUE(std::isinf(bf16_dot_step(0.0f, 0x1p100f, 0x1p100f)));
}

TEST(GemmBf16Units, TheHardwareSumsAsThePortableSteps) {
  if (!bf16_units_at(best_simd_level())) GTEST_SKIP() << "this CPU has no bf16 units (avx512bf16)";
  // Many short sums of values near fp32's smallest normal, where the
  // flush-to-zero rule decides bits.
  const int m = 64, n = 96, k = 6;
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const std::vector<float> a = hard_values(size_t(m) * k, seed, true), b = hard_values(size_t(k) * n, ~seed, true);
    std::vector<float> units(size_t(m) * n, 0.0f), portable(units);
    gemm_bf16(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, units.data(), n,
              best_simd_level());
    gemm_bf16(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, portable.data(), n,
              SimdLevel::kScalar);
    ASSERT_TRUE(same_bits(units, portable)) << "seed " << seed;
  }
}

TEST(GemmBf16Units, CloseToTheFp32Product) {
  const int m = 32, n = 48, k = 256;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n);
  for (float& x : a) x = normal(gen);
  for (float& x : b) x = normal(gen);
  std::vector<float> c16(size_t(m) * n), c32(size_t(m) * n);
  gemm_bf16(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c16.data(), n);
  gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c32.data(), n);
  // Each operand's relative rounding error is at most 2^-9, so each product's
  // at most ~2^-8; |sum error| <= 2^-8 * sum |a||b|, about 2^-8 * k * E|a||b|
  // = 256 * 2/pi / 256: well within 0.2 here, against sums of size ~16.
  double worst = 0;
  for (size_t i = 0; i < c16.size(); ++i) worst = std::max(worst, std::fabs(double(c16[i]) - c32[i]));
  EXPECT_LT(worst, 0.2);
  EXPECT_GT(worst, 0.0);  // the operands were rounded
}

TEST(GemmBf16Units, ThreadsAtOnceGetTheSerialBits) {
  const int m = 40, n = 70, k = 300;
  const std::vector<float> a = hard_values(size_t(m) * k, 8, false), b = hard_values(size_t(k) * n, 9, false);
  std::vector<float> serial(size_t(m) * n);
  gemm_bf16(Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, serial.data(), n);
  std::vector<std::vector<float>> out(4, std::vector<float>(serial.size()));
  std::vector<std::thread> threads;
  for (auto& o : out) {
    threads.emplace_back([&, ptr = o.data()] {
      for (int rep = 0; rep < 5; ++rep) {
        gemm_bf16(Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, ptr, n);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : out) EXPECT_TRUE(same_bits(o, serial));
}

TEST(Compute, IsTheThreadsAndMatmulFollowsIt) {
  EXPECT_EQ(thread_compute(), Compute::kFp32);
  EXPECT_EQ(parse_compute("bf16"), Compute::kBf16);
  EXPECT_EQ(parse_compute("fp32"), Compute::kFp32);
  EXPECT_FALSE(parse_compute("fp16").has_value());
  const int m = 5, n = 7, k = 9;
  const std::vector<float> a = hard_values(size_t(m) * k, 3, false), b = hard_values(size_t(k) * n, 4, false);
  std::vector<float> want16(size_t(m) * n), want32(want16), got(want16);
  gemm_bf16(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want16.data(), n);
  gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want32.data(), n);
  {
    const ScopedCompute bf16(Compute::kBf16);
    EXPECT_EQ(thread_compute(), Compute::kBf16);
    std::thread([] { EXPECT_EQ(thread_compute(), Compute::kFp32); }).join();  // another thread's own
    matmul(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, got.data(), n);
    EXPECT_TRUE(same_bits(got, want16));
    {
      const ScopedCompute fp32(Compute::kFp32);
      matmul(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, got.data(), n);
      EXPECT_TRUE(same_bits(got, want32));
    }
    EXPECT_EQ(thread_compute(), Compute::kBf16);
  }
  EXPECT_EQ(thread_compute(), Compute::kFp32);
}

}  // namespace
}  // namespace zerodp::kernels
