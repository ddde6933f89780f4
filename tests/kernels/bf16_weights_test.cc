// SPDX-License-Identifier: Apache-2.0
// Weights read in place as bf16 (weights.h): gemm_bf16() with a bf16 B, at
// every SIMD level, for both orientations of B, across every edge of the
// blocking, on bf16 values of every class (subnormals, signed zeros,
// infinities, signaling and quiet NaNs), against the fp32 overload on their
// widening, bit for bit; matmul(), the linear layer and the embedding on
// bf16 weights against the same on fp32 ones; and the fp32 products'
// refusal of bf16 weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/convert.h"
#include "core/dtype.h"
#include "core/error.h"
#include "gemm_bf16_cases.h"
#include "kernels/compute.h"
#include "kernels/embedding.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_bf16_kernels.h"
#include "kernels/linear.h"
#include "kernels/weights.h"
#include "support/same_bits.h"
#include "support/simd_levels.h"

// A namespace of its own: the tests build several files to a translation
// unit, and their helpers' names would meet.
namespace zerodp::kernels::bf16_weights_test {
namespace {

using ::zerodp::testing::contains;
using ::zerodp::testing::same_bits;

// bf16 values that need the operand rule or pass it unchanged: subnormals
// (the zero of their sign as operands), zeros and the smallest normals;
// then those whose products overflow or are NaN: the largest normals,
// infinities, signaling NaNs (quieted) and quiet ones.
constexpr uint16_t kSpecial[] = {0x0001, 0x807F, 0x0040, 0x8001, 0x0000, 0x8000, 0x0080, 0x8080,
                                 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7F81, 0xFFA5, 0x7FC0, 0xFFC1};
constexpr size_t kFiniteSpecials = 8;

// Which special values bf16_values() draws, each "one in" so many values
// (0: none).
struct Specials {
  uint32_t finite = 0;
  uint32_t nonfinite = 0;
};

// bf16 values of every magnitude class (bf16 subnormals among those near
// fp32's smallest normal, core's rounding keeping them), and kSpecial's.
std::vector<BFloat16> bf16_values(size_t n, uint32_t seed, Specials specials) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::vector<BFloat16> v(n);
  for (BFloat16& x : v) {
    const uint32_t kind = gen() % 16;
    float value = mantissa(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 9) - 4);
    if (kind == 0) value = mantissa(gen) * 0x1p-126f;
    if (kind == 1) value = mantissa(gen) * std::ldexp(1.0f, -100 - static_cast<int>(gen() % 26));
    if (kind == 2) value = 0.0f;
    x = float_to_bfloat16(value);
    if (specials.finite != 0 && gen() % specials.finite == 0) x.bits = kSpecial[gen() % kFiniteSpecials];
    if (specials.nonfinite != 0 && gen() % specials.nonfinite == 0) {
      x.bits = kSpecial[kFiniteSpecials + gen() % (std::size(kSpecial) - kFiniteSpecials)];
    }
  }
  return v;
}

std::vector<float> fp32_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = gen() % 16 == 0 ? 0.0f : mantissa(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 9) - 4);
  return v;
}

// The fp32 values an engine's fp32 copy of bf16 weights holds (core's
// conversion: exact, a NaN quieted).
std::vector<float> widened(const std::vector<BFloat16>& v) {
  std::vector<float> out(v.size());
  convert(std::span<const BFloat16>(v), std::span<float>(out));
  return out;
}

// The same widened by the bits alone (a signaling NaN stays signaling).
std::vector<float> widened_bits(const std::vector<BFloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::bit_cast<float>(static_cast<uint32_t>(v[i].bits) << 16);
  return out;
}

using gemm_bf16_cases::kAlphaBeta;
using gemm_bf16_cases::Shape;

// One product with B bf16 (ldb 3 past B's width, the padding NaNs that no
// sum may read) against the fp32 overload on B's widening, both through
// gemm_blocked() (or gemm_bf16() when `blocking` is null). With `specials`,
// B's subnormals and zeros one in 7 values, and about a quarter of C's
// sums meeting an infinity or a NaN.
::testing::AssertionResult reads_b_as_its_widening(Trans ta, Trans tb, Shape s, float alpha, float beta,
                                                   const bf16_gemm::Blocking* blocking, bool specials) {
  const auto seed = static_cast<uint32_t>(s.m * 131 + s.n * 7 + s.k);
  const std::vector<float> a = fp32_values(size_t(s.m) * s.k, seed);
  const int b_rows = tb == Trans::kNo ? s.k : s.n, b_cols = tb == Trans::kNo ? s.n : s.k;
  const int lda = ta == Trans::kNo ? s.k : s.m, ldb = b_cols + 3;
  const Specials drawn = specials ? Specials{7, 4 * static_cast<uint32_t>(s.k) + 1} : Specials{};
  const std::vector<BFloat16> values = bf16_values(size_t(b_rows) * b_cols, seed + 1, drawn);
  std::vector<BFloat16> b(size_t(b_rows) * ldb, BFloat16{0x7FC0});
  for (int r = 0; r < b_rows; ++r) {
    std::copy_n(values.begin() + ptrdiff_t(r) * b_cols, b_cols, b.begin() + ptrdiff_t(r) * ldb);
  }
  const std::vector<float> b32 = widened(b);
  const std::vector<float> c0 = fp32_values(size_t(s.m) * s.n, seed + 2);
  std::vector<float> want(c0), got(c0);
  const SimdLevel level = active_simd_level();
  if (blocking != nullptr) {
    bf16_gemm::gemm_blocked(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b32.data(), ldb, beta, want.data(), s.n, level,
                            *blocking);
    bf16_gemm::gemm_blocked(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, got.data(), s.n, level,
                            *blocking);
  } else {
    gemm_bf16(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b32.data(), ldb, beta, want.data(), s.n);
    gemm_bf16(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, got.data(), s.n);
  }
  if (same_bits(got, want)) return ::testing::AssertionSuccess();
  size_t first = 0;
  while (std::bit_cast<uint32_t>(got[first]) == std::bit_cast<uint32_t>(want[first])) ++first;
  return ::testing::AssertionFailure() << s.m << "x" << s.n << "x" << s.k << " ta=" << int(ta) << " tb=" << int(tb)
                                       << " alpha=" << alpha << " beta=" << beta << ": C[" << first / s.n << "]["
                                       << first % s.n << "] " << got[first] << " (0x" << std::hex
                                       << std::bit_cast<uint32_t>(got[first]) << "), widened fp32 B gives "
                                       << want[first] << " (0x" << std::bit_cast<uint32_t>(want[first]) << ")";
}

class GemmBf16Weights : public ::zerodp::testing::AtEverySimdLevel {};
INSTANTIATE_AT_EVERY_SIMD_LEVEL(GemmBf16Weights);

TEST_P(GemmBf16Weights, Bf16BGivesTheBitsOfItsWideningAtEveryEdgeTransposeAlphaAndBeta) {
  for (const bool special : {true, false}) {
    for (const Shape s : {Shape{1, 1, 1}, Shape{9, 33, 7}, Shape{8, 32, 64}, Shape{70, 65, 3}, Shape{17, 100, 131}}) {
      for (Trans ta : {Trans::kNo, Trans::kYes}) {
        for (Trans tb : {Trans::kNo, Trans::kYes}) {
          for (const auto& [alpha, beta] : kAlphaBeta) {
            EXPECT_TRUE(reads_b_as_its_widening(ta, tb, s, alpha, beta, nullptr, special));
          }
        }
      }
    }
  }
}

TEST_P(GemmBf16Weights, Bf16BGivesTheBitsOfItsWideningAcrossEveryEdgeOfTheBlocking) {
  // gemm_bf16_test.cc's small blockings (3 blocks of rows, columns and k,
  // bands of carried sums, the last tiles partial, k odd; blocks of k no
  // multiple of 16 pairs; k = 0), then the real one over several blocks of
  // each dimension (k = 2055: 3 blocks, the last ending on an even element).
  gemm_bf16_cases::for_each_block_edge(
      [](Trans ta, Trans tb, Shape s, float alpha, float beta, const bf16_gemm::Blocking& blocking) {
        EXPECT_TRUE(reads_b_as_its_widening(ta, tb, s, alpha, beta, &blocking, true));
      });
  for (const Shape s : {Shape{13, 37, 2055}, Shape{14, 2093, 9}, Shape{391, 40, 30}}) {
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      for (const auto& [alpha, beta] : kAlphaBeta) {
        EXPECT_TRUE(reads_b_as_its_widening(Trans::kNo, tb, s, alpha, beta, nullptr, true));
      }
    }
  }
}

TEST_P(GemmBf16Weights, EachSpecialValueReadsAsItsWidening) {
  // Column j of op(B) holds kSpecial[j % 16] alone, at k = 5j mod k (even
  // and odd elements of pairs, across several chunks of rows and pairs),
  // zeros elsewhere, against A's 2^127: a bf16 subnormal read as itself
  // would give up to 2^-6, not a zero. Widened by core's conversion (a NaN
  // quieted) or by the bits alone (a signaling NaN kept), the same bits.
  const int m = 3, n = 70, k = 67;
  const std::vector<float> a(size_t(m) * k, 0x1p127f);
  for (Trans tb : {Trans::kNo, Trans::kYes}) {
    std::vector<BFloat16> b(size_t(k) * n);
    for (int j = 0; j < n; ++j) {
      const int kk = 5 * j % k;
      b[tb == Trans::kNo ? size_t(kk) * n + j : size_t(j) * k + kk] = BFloat16{kSpecial[j % std::size(kSpecial)]};
    }
    const int ldb = tb == Trans::kNo ? n : k;
    std::vector<float> got(size_t(m) * n), want(got), want_bits(got);
    gemm_bf16(Trans::kNo, tb, m, n, k, 1.0f, a.data(), k, b.data(), ldb, 0.0f, got.data(), n);
    gemm_bf16(Trans::kNo, tb, m, n, k, 1.0f, a.data(), k, widened(b).data(), ldb, 0.0f, want.data(), n);
    gemm_bf16(Trans::kNo, tb, m, n, k, 1.0f, a.data(), k, widened_bits(b).data(), ldb, 0.0f, want_bits.data(), n);
    EXPECT_TRUE(same_bits(got, want)) << "tb=" << int(tb);
    EXPECT_TRUE(same_bits(want_bits, want)) << "tb=" << int(tb);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        const float c = got[size_t(i) * n + j];
        const int kind = j % 16;
        if (kind < 6) {
          EXPECT_EQ(c, 0.0f) << "column " << j << " (0x" << std::hex << kSpecial[kind] << ")";
        } else if (kind == 6) {
          EXPECT_EQ(c, 2.0f) << "2^-126 x 2^127";
        } else if (kind >= 12) {
          EXPECT_TRUE(std::isnan(c)) << "column " << j;
        }
      }
    }
  }
}

// The packing's own promise, below what a product can show (the bf16 units
// read a subnormal operand as zero and quiet a NaN whatever the packing
// gives them): a bf16 source packs into the very words its widening packs
// into, at every level's packing, both orientations, both panel widths,
// ragged rows and odd ends of k.
TEST(GemmBf16WeightsPacking, Bf16SourcesPackIntoTheWordsOfTheirWidening) {
  std::vector<std::pair<const char*, bf16_gemm::PackFn>> packs = {{"scalar", bf16_gemm::pack_scalar}};
#if ZERODP_SIMD_X86_64
  if (bf16_units_at(best_simd_level())) packs.emplace_back("avx512bf16", bf16_gemm::pack_avx512bf16);
#endif
  const int stored_rows = 61, stored_k = 83;
  for (const bool by_columns : {false, true}) {
    // [rows, k] stored with ld = k + 3, or [k, rows] with ld = rows + 5.
    const int ld = by_columns ? stored_rows + 5 : stored_k + 3;
    const size_t size = by_columns ? size_t(stored_k) * ld : size_t(stored_rows) * ld;
    const std::vector<BFloat16> b = bf16_values(size, by_columns ? 21 : 22, {3, 5});
    const std::vector<float> b32 = widened(b);
    const bf16_gemm::PackSource fp32_source{b32.data(), ld, by_columns};
    const bf16_gemm::PackSource bf16_source{nullptr, ld, by_columns, b.data()};
    for (const int width : {bf16_gemm::kTileRows, bf16_gemm::kTileCols}) {
      for (const auto& [row0, rows, k0, k1] :
           {std::tuple{0, 61, 0, 83}, std::tuple{5, 40, 2, 70}, std::tuple{17, 33, 64, 83}, std::tuple{3, 1, 0, 1}}) {
        const int pairs = (k1 - k0 + 1) / 2, panels = (rows + width - 1) / width;
        for (const auto& [name, pack] : packs) {
          std::vector<uint32_t> want(size_t(panels) * width * pairs, 0xDEADBEEF), got(want);
          pack(fp32_source, row0, rows, k0, k1, width, want.data());
          pack(bf16_source, row0, rows, k0, k1, width, got.data());
          EXPECT_EQ(got, want) << name << " by_columns=" << by_columns << " width=" << width << " rows " << row0 << "+"
                               << rows << " k " << k0 << ".." << k1;
        }
      }
    }
  }
}

TEST_P(GemmBf16Weights, MatmulReadsBf16WeightsOnlyAtBf16Compute) {
  const int m = 5, n = 7, k = 9;
  const std::vector<float> a = fp32_values(size_t(m) * k, 3);
  const std::vector<BFloat16> b = bf16_values(size_t(k) * n, 4, {});
  const std::vector<float> b32 = widened(b);
  std::vector<float> want(size_t(m) * n), got(want);
  {
    const ScopedCompute bf16(Compute::kBf16);
    matmul(Trans::kNo, Trans::kNo, m, n, k, 0.5f, a.data(), k, b32.data(), n, 0.0f, want.data(), n);
    matmul(Trans::kNo, Trans::kNo, m, n, k, 0.5f, a.data(), k, Weights(std::span<const BFloat16>(b)), n, 0.0f,
           got.data(), n);
    EXPECT_TRUE(same_bits(got, want));
  }
  // fp32 weights through the Weights overload: sgemm's bits.
  matmul(Trans::kNo, Trans::kNo, m, n, k, 0.5f, a.data(), k, b32.data(), n, 0.0f, want.data(), n);
  matmul(Trans::kNo, Trans::kNo, m, n, k, 0.5f, a.data(), k, Weights(b32), n, 0.0f, got.data(), n);
  EXPECT_TRUE(same_bits(got, want));
  // bf16 weights at fp32 compute: refused, C untouched.
  std::fill(got.begin(), got.end(), 7.0f);
  try {
    matmul(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, Weights(std::span<const BFloat16>(b)), n, 0.0f,
           got.data(), n);
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "--compute bf16")) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float x) { return x == 7.0f; }));
}

TEST(KernelWeights, HoldEitherTypeAsAViewAndRefuseTheOther) {
  std::vector<float> f(6, 1.0f);
  const std::vector<float>& cf = f;
  const std::vector<BFloat16> h(10, BFloat16{0x3F80});
  // Implicit from what the fp32 call sites pass.
  for (const Weights w : {Weights(f), Weights(cf), Weights(std::span<float>(f)), Weights(std::span<const float>(f))}) {
    EXPECT_FALSE(w.is_bf16());
    EXPECT_EQ(w.size(), 6u);
    EXPECT_EQ(w.fp32().data(), f.data());
    EXPECT_THROW((void)w.bf16(), ConfigError);
  }
  const Weights none;
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.is_bf16());
  EXPECT_TRUE(none.fp32().empty());
  const Weights w(std::span<const BFloat16>{h});
  EXPECT_TRUE(w.is_bf16());
  EXPECT_FALSE(w.empty());
  EXPECT_EQ(w.size(), 10u);
  EXPECT_EQ(w.bf16().data(), h.data());
  EXPECT_THROW((void)w.fp32(), ConfigError);
  const Weights part = w.subspan(3, 7);
  EXPECT_TRUE(part.is_bf16());
  EXPECT_EQ(part.bf16().data(), h.data() + 3);
  EXPECT_EQ(part.size(), 7u);
  EXPECT_TRUE(w.subspan(10, 0).empty());
  EXPECT_EQ(Weights(f).subspan(2, 3).fp32().data(), f.data() + 2);
  EXPECT_THROW((void)w.subspan(4, 7), ShapeError);
  EXPECT_THROW((void)w.subspan(11, 0), ShapeError);
  EXPECT_THROW((void)Weights(f).subspan(0, 7), ShapeError);
}

class LinearBf16Weights : public ::zerodp::testing::AtEverySimdLevel {};
INSTANTIATE_AT_EVERY_SIMD_LEVEL(LinearBf16Weights);

// A layer of odd sizes, its weights bf16 (subnormals and zeros among them;
// no NaN, which would hide the rest) and their fp32 widening.
struct Layer {
  LinearShape s{37, 45, 70};
  std::vector<BFloat16> w = bf16_values(size_t(s.out) * s.in, 5, {.finite = 7});
  std::vector<float> w32 = widened(w);
  std::vector<float> inp = fp32_values(size_t(s.rows) * s.in, 6);
  std::vector<float> dout = fp32_values(size_t(s.rows) * s.out, 7);
  std::vector<float> bias = fp32_values(size_t(s.out), 8);
  Weights bf16() const { return Weights(std::span<const BFloat16>(w)); }
};

TEST_P(LinearBf16Weights, GiveTheBitsOfTheirWideningAtBf16Compute) {
  const Layer l;
  const LinearShape s = l.s;
  const ScopedCompute bf16(Compute::kBf16);
  for (const bool with_bias : {true, false}) {
    const std::span<const float> bias = with_bias ? std::span<const float>(l.bias) : std::span<const float>();
    std::vector<float> want(size_t(s.rows) * s.out), got(want);
    linear_forward(want, l.inp, l.w32, bias, s);
    linear_forward(got, l.inp, l.bf16(), bias, s);
    EXPECT_TRUE(same_bits(got, want)) << "forward, bias " << with_bias;
  }
  for (const bool accumulate : {false, true}) {
    for (const float scale : {1.0f, 0.375f}) {
      const std::vector<float> start = fp32_values(l.inp.size(), 9);
      std::vector<float> want_dinp(start), got_dinp(start);
      std::vector<float> want_dw(l.w32.size(), 1.0f), got_dw(want_dw), want_db(l.bias.size(), 1.0f), got_db(want_db);
      linear_backward(want_dinp, want_dw, want_db, l.dout, l.inp, l.w32, s, accumulate, scale);
      linear_backward(got_dinp, got_dw, got_db, l.dout, l.inp, l.bf16(), s, accumulate, scale);
      EXPECT_TRUE(same_bits(got_dinp, want_dinp)) << "backward, accumulate " << accumulate << " scale " << scale;
      EXPECT_TRUE(same_bits(got_dw, want_dw) && same_bits(got_db, want_db));
      std::fill(got_dinp.begin(), got_dinp.end(), 0.5f);
      std::fill(want_dinp.begin(), want_dinp.end(), 0.5f);
      linear_backward_input(want_dinp, l.dout, l.w32, s, accumulate, scale);
      linear_backward_input(got_dinp, l.dout, l.bf16(), s, accumulate, scale);
      EXPECT_TRUE(same_bits(got_dinp, want_dinp)) << "backward input, accumulate " << accumulate;
    }
  }
  // The head's pattern: a part of a larger bf16 unit.
  std::vector<BFloat16> unit(l.w.size() + 11, BFloat16{0x7FC0});
  std::copy(l.w.begin(), l.w.end(), unit.begin() + 4);
  const Weights part = Weights(std::span<const BFloat16>(unit)).subspan(4, l.w.size());
  std::vector<float> want(size_t(s.rows) * s.out), got(want);
  linear_forward(want, l.inp, l.w32, {}, s);
  linear_forward(got, l.inp, part, {}, s);
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_THROW(linear_forward(got, l.inp, Weights(std::span<const BFloat16>(unit)), {}, s), ShapeError);
}

TEST_P(LinearBf16Weights, AreAConfigErrorAtFp32ComputeBeforeAnythingIsWritten) {
  const Layer l;
  const LinearShape s = l.s;
  ASSERT_EQ(thread_compute(), Compute::kFp32);
  std::vector<float> out(size_t(s.rows) * s.out, 2.0f), dinp(l.inp.size(), 2.0f), dw(l.w32.size(), 2.0f);
  std::vector<float> db(l.bias.size(), 2.0f);
  EXPECT_THROW(linear_forward(out, l.inp, l.bf16(), l.bias, s), ConfigError);
  EXPECT_THROW(linear_backward(dinp, dw, db, l.dout, l.inp, l.bf16(), s, true), ConfigError);
  EXPECT_THROW(linear_backward_input(dinp, l.dout, l.bf16(), s, false), ConfigError);
  for (const auto* v : {&out, &dinp, &dw, &db}) {
    EXPECT_TRUE(std::all_of(v->begin(), v->end(), [](float x) { return x == 2.0f; }));
  }
  // No input gradient: the weights are not read, so their type is no matter.
  std::vector<float> want_dw(dw), want_db(db);
  linear_backward({}, dw, db, l.dout, l.inp, l.bf16(), s, false);
  linear_backward({}, want_dw, want_db, l.dout, l.inp, {}, s, false);
  EXPECT_TRUE(same_bits(dw, want_dw) && same_bits(db, want_db));
}

TEST(EmbeddingBf16, GivesTheBitsOfItsWidenedTables) {
  const EmbeddingShape s{3, 5, 19, 11};
  // Tables of every class, the special values among them, infinities and
  // NaNs in wte only: of two NaNs an add may return either (the compiler
  // may swap its operands), so no sum here has two.
  const std::vector<BFloat16> wte = bf16_values(size_t(s.vocab + 2) * s.channels, 12, {5, 9});
  const std::vector<BFloat16> wpe = bf16_values(size_t(s.seq + 1) * s.channels, 13, {.finite = 5});
  std::vector<int32_t> tokens(size_t(s.batch) * s.seq);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7) % s.vocab);
  std::vector<float> want(size_t(s.batch) * s.seq * s.channels), got(want), got_bits(want);
  embedding_forward(want, tokens, widened(wte), widened(wpe), s);
  embedding_forward(got, tokens, wte, wpe, s);
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](float x) { return std::isnan(x); }));
  // A signaling NaN left signaling by the widening: quieted by the add.
  embedding_forward(got_bits, tokens, widened_bits(wte), widened_bits(wpe), s);
  EXPECT_TRUE(same_bits(got_bits, want));
  tokens[4] = s.vocab;
  EXPECT_THROW(embedding_forward(got, tokens, wte, wpe, s), ShapeError);
  tokens[4] = 0;
  EXPECT_THROW(embedding_forward(got, tokens, std::span<const BFloat16>(wte).first(10), wpe, s), ShapeError);
}

// A weight gradient made a few rows at a time (the engine's rows of a tied
// embedding) has the bits of the whole one: at bf16 compute every element's
// sum is its own, and the scatter adds to each row in the same order.
TEST_P(LinearBf16Weights, AWeightGradientInRowsHasTheWholeOnesBits) {
  const Layer l;
  const LinearShape s = l.s;
  const ScopedCompute bf16(Compute::kBf16);
  std::vector<float> whole(l.w32.size(), 0.25f), rows(whole);
  linear_backward({}, whole, {}, l.dout, l.inp, {}, s, false, 0.375f);
  const size_t C = size_t(s.in);
  for (size_t first = 0; first < size_t(s.out); first += 9) {
    const size_t n = std::min<size_t>(9, size_t(s.out) - first);
    linear_backward_weight_rows(std::span<float>(rows).subspan(first * C, n * C), first, l.dout, l.inp, s, 0.375f);
  }
  EXPECT_TRUE(same_bits(rows, whole));
  EXPECT_THROW(linear_backward_weight_rows(std::span<float>(rows).first(C + 1), 0, l.dout, l.inp, s), ShapeError);
  EXPECT_THROW(linear_backward_weight_rows(std::span<float>(rows).first(2 * C), size_t(s.out) - 1, l.dout, l.inp, s),
               ShapeError);
}

TEST(EmbeddingRows, AScatterInRowsHasTheWholeOnesBits) {
  const EmbeddingShape s{3, 5, 19, 11};
  const size_t C = s.channels, wte_rows = 13, wpe_rows = 7;  // wte padded past the vocabulary
  std::vector<int32_t> tokens(size_t(s.batch) * s.seq);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * i + 3) % 4);  // repeats
  const std::vector<float> dout = fp32_values(tokens.size() * C, 14);
  std::vector<float> whole = fp32_values((wte_rows + wpe_rows) * C, 15), rows(whole);
  embedding_backward(std::span<float>(whole).first(wte_rows * C), std::span<float>(whole).subspan(wte_rows * C), dout,
                     tokens, s);
  for (size_t first = 0; first < wte_rows + wpe_rows; first += 3) {
    const size_t n = std::min<size_t>(3, wte_rows + wpe_rows - first);
    embedding_backward_rows(std::span<float>(rows).subspan(first * C, n * C), first, wte_rows, dout, tokens, s);
  }
  EXPECT_TRUE(same_bits(rows, whole));
  tokens[2] = s.vocab;
  EXPECT_THROW(embedding_backward_rows(std::span<float>(rows).first(C), 0, wte_rows, dout, tokens, s), ShapeError);
}

}  // namespace
}  // namespace zerodp::kernels::bf16_weights_test
