// SPDX-License-Identifier: Apache-2.0
// Stochastic rounding of the block quantization (comm/quantize.h's
// QuantRounding): each code is one of the two around x / scale, the
// dequantized value is unbiased where rounding to the nearest is not, and
// the draws depend on (stream, element index) alone. The format itself
// (scales, code layout) and the default rounding are quantize_test.cc's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "comm/quantize.h"

namespace zerodp::comm {
namespace {

std::vector<std::byte> pack(const std::vector<float>& x, Quantization q, const QuantRounding& r) {
  std::vector<std::byte> packed(quantized_bytes(x.size(), q));
  quantize(std::span<const float>(x), q, packed, r);
  return packed;
}

std::vector<float> unpack(const std::vector<std::byte>& packed, size_t n, Quantization q) {
  std::vector<float> back(n);
  dequantize(packed, n, q, 0, back);
  return back;
}

// One block: a 127 (int8: scale 1) or 7 (int4: scale 1), then `value`.
std::vector<float> block_of(float value, Quantization q) {
  std::vector<float> x(kQuantBlock, value);
  x[0] = static_cast<float>(quantization_max_code(q));
  return x;
}

TEST(QuantizeStochastic, CodesAreTheTwoAroundXOverScale) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (Quantization q : {Quantization::kInt8, Quantization::kInt4}) {
    std::vector<float> x(3 * kQuantBlock + 17);
    for (float& v : x) v = d(rng);
    const std::vector<float> back = unpack(pack(x, q, {.stochastic = true, .stream = 7}), x.size(), q);
    for (size_t i = 0; i < x.size(); ++i) {
      float absmax = 0;
      const size_t b = i / kQuantBlock * kQuantBlock;
      for (size_t j = b; j < std::min(x.size(), b + kQuantBlock); ++j) absmax = std::max(absmax, std::fabs(x[j]));
      const float scale = absmax / static_cast<float>(quantization_max_code(q));
      // Less than one step away (plus fp32 rounding), and on the grid.
      EXPECT_LT(std::fabs(back[i] - x[i]), scale * (1.0f + 1e-5f)) << i;
      EXPECT_NEAR(back[i] / scale, std::nearbyint(back[i] / scale), 1e-4) << i;
    }
  }
}

// 0.3 steps above 0 (and 2.75 steps, and -0.3): nearest rounding sends 0,
// 3 and -0 every time, stochastic rounding goes up 30% (75%) of the time,
// so the mean of many packings is the value. 400 packings of 255 elements:
// the mean's standard deviation is sqrt(0.21 / 102000) = 0.0014 steps.
TEST(QuantizeStochastic, RoundingIsUnbiasedWhereNearestIsNot) {
  for (Quantization q : {Quantization::kInt8, Quantization::kInt4}) {
    for (float value : {0.3f, 2.75f, -0.3f}) {
      const std::vector<float> x = block_of(value, q);
      const float nearest = unpack(pack(x, q, {}), x.size(), q)[1];
      EXPECT_EQ(nearest, std::nearbyint(value));
      double sum = 0;
      for (uint64_t stream = 0; stream < 400; ++stream) {
        const std::vector<float> back = unpack(pack(x, q, {.stochastic = true, .stream = stream}), x.size(), q);
        EXPECT_EQ(back[0], x[0]);  // on the grid: exact
        for (size_t i = 1; i < x.size(); ++i) sum += back[i];
      }
      EXPECT_NEAR(sum / (400.0 * (x.size() - 1)), value, 0.01) << quantization_name(q) << " " << value;
    }
  }
}

// The draws are a function of (stream, first_index + i): a block packed on
// its own with its index in the whole gives the whole's codes (so however
// a reduce-scatter cuts its input, every element draws the same), the same
// stream gives the same bytes, another stream other bytes.
TEST(QuantizeStochastic, DrawsDependOnStreamAndIndexAlone) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(4 * kQuantBlock);
  for (float& v : x) v = d(rng);
  const QuantRounding r{.stochastic = true, .stream = 99};
  const std::vector<std::byte> whole = pack(x, Quantization::kInt8, r);
  EXPECT_EQ(whole, pack(x, Quantization::kInt8, r));
  EXPECT_NE(whole, pack(x, Quantization::kInt8, {.stochastic = true, .stream = 100}));
  const std::vector<float> third(x.begin() + 2 * kQuantBlock, x.begin() + 3 * kQuantBlock);
  const std::vector<std::byte> part =
      pack(third, Quantization::kInt8, {.stochastic = true, .stream = 99, .first_index = 2 * kQuantBlock});
  // The whole's third block: its scale, then its codes.
  const size_t blocks = 4;
  EXPECT_EQ(std::memcmp(part.data(), whole.data() + 2 * sizeof(float), sizeof(float)), 0);
  EXPECT_EQ(
      std::memcmp(part.data() + sizeof(float), whole.data() + blocks * sizeof(float) + 2 * kQuantBlock, kQuantBlock),
      0);
}

}  // namespace
}  // namespace zerodp::comm
