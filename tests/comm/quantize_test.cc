// SPDX-License-Identifier: Apache-2.0
// The compressed collectives' block quantization (comm/quantize.h): the
// packed size, the round trip's error bound per block (written from the
// format's definition, not from the code), the edge cases (an all-zero
// block, one huge outlier, NaN and infinities, a block too small for its
// scale), int4's nibbles, fp16/bf16 inputs, and every offered block size.
#include "comm/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// The default block (256 elements) with each code width.
constexpr QuantFormat kI8{.codes = Quantization::kInt8};
constexpr QuantFormat kI4{.codes = Quantization::kInt4};
constexpr QuantFormat kPlain{.codes = Quantization::kNone};

std::vector<float> round_trip(const std::vector<float>& x, QuantFormat f) {
  std::vector<std::byte> packed(quantized_bytes(x.size(), f));
  quantize(std::span<const float>(x), f, packed);
  std::vector<float> back(x.size());
  dequantize(packed, x.size(), f, 0, back);
  return back;
}

float scale_of_block(const std::vector<float>& x, size_t block, QuantFormat f) {
  float absmax = 0;
  for (size_t i = block * f.block; i < std::min<size_t>(x.size(), (block + 1) * f.block); ++i) {
    absmax = std::max(absmax, std::fabs(x[i]));
  }
  return absmax / static_cast<float>(quantization_max_code(f.codes));
}

TEST(Quantize, PackedBytesAreCodesPlusOneScalePerBlock) {
  EXPECT_EQ(quantized_bytes(0, kI8), 0u);
  EXPECT_EQ(quantized_bytes(1, kI8), 4u + 1);
  EXPECT_EQ(quantized_bytes(256, kI8), 4u + 256);
  EXPECT_EQ(quantized_bytes(257, kI8), 8u + 257);
  EXPECT_EQ(quantized_bytes(1000, kI8), 4u * 4 + 1000);
  EXPECT_EQ(quantized_bytes(1, kI4), 4u + 1);
  EXPECT_EQ(quantized_bytes(257, kI4), 8u + 129);
  EXPECT_EQ(quantized_bytes(1000, kPlain), 0u);
  EXPECT_EQ(kI8.block, 256u);
  // Other blocks: one scale per block of theirs.
  EXPECT_EQ(quantized_bytes(1000, {.codes = Quantization::kInt8, .block = 64}), 4u * 16 + 1000);
  EXPECT_EQ(quantized_bytes(1000, {.codes = Quantization::kInt4, .block = 32}), 4u * 32 + 500);
  EXPECT_EQ(quantized_bytes(4097, {.codes = Quantization::kInt8, .block = 2048}), 4u * 3 + 4097);
}

TEST(Quantize, OffersPowersOfTwoFrom32To2048) {
  for (uint64_t b : {32u, 64u, 128u, 256u, 512u, 1024u, 2048u}) EXPECT_TRUE(quant_block_offered(b)) << b;
  for (uint64_t b : {0u, 1u, 16u, 48u, 100u, 4096u}) EXPECT_FALSE(quant_block_offered(b)) << b;
  // Every offered block divides the reduce-scatter's chunk.
  EXPECT_EQ(kReduceChunk % kMaxQuantBlock, 0u);
  std::vector<float> x(100, 1.0f);
  std::vector<std::byte> packed(200);
  EXPECT_THROW(quantize(std::span<const float>(x), {.codes = Quantization::kInt8, .block = 48}, packed), ShapeError);
  EXPECT_THROW((void)quantized_bytes(10, {.codes = Quantization::kInt8, .block = 0}),
               ShapeError);  // not a division by 0
  EXPECT_EQ(quantized_bytes(10, {.codes = Quantization::kNone, .block = 0}), 0u);
}

// |x - x'| <= scale / 2, plus the fp32 rounding of x / scale (relative
// 2^-24 of |x / scale| <= 127 steps, i.e. <= 127 * 2^-24 * scale) and of the
// product (relative 2^-24 of |x'|).
TEST(Quantize, RoundTripErrorIsHalfAStepPerBlock) {
  std::mt19937 rng(5);
  for (Quantization q : {Quantization::kInt8, Quantization::kInt4}) {
    for (uint32_t block : {32u, 64u, 256u, 2048u}) {
      const QuantFormat f{.codes = q, .block = block};
      for (size_t n : {size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{1000}, size_t{4099}}) {
        std::vector<float> x(n);
        for (size_t i = 0; i < n; ++i) {
          // Blocks of very different magnitudes, so each needs its own scale.
          const float magnitude = std::ldexp(1.0f, static_cast<int>((i / block) % 7) * 5 - 15);
          x[i] = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng) * magnitude;
        }
        const std::vector<float> back = round_trip(x, f);
        for (size_t i = 0; i < n; ++i) {
          const float scale = scale_of_block(x, i / block, f);
          const double bound =
              0.5 * scale + 128.0 * std::ldexp(1.0, -24) * scale + std::ldexp(1.0, -24) * std::fabs(back[i]);
          ASSERT_LE(std::fabs(static_cast<double>(x[i]) - back[i]), bound)
              << quantization_name(q) << " block " << block << " n " << n << " i " << i << " x " << x[i] << " back "
              << back[i];
        }
        // The block's absmax element comes back within one rounding.
        for (size_t b = 0; b * block < n; ++b) {
          size_t arg = b * block;
          for (size_t i = arg; i < std::min<size_t>(n, (b + 1) * block); ++i) {
            if (std::fabs(x[i]) > std::fabs(x[arg])) arg = i;
          }
          EXPECT_NEAR(back[arg], x[arg], std::fabs(x[arg]) * 1e-6) << "block " << b;
        }
      }
    }
  }
}

TEST(Quantize, CodesAreRoundHalfToEvenOfXOverScale) {
  // absmax 127 gives scale 1: the codes are x rounded half to even.
  std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.49f, 3.51f, -127.0f};
  const std::vector<float> back = round_trip(x, kI8);
  const std::vector<float> expected = {127.0f, 0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 4.0f, -127.0f};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(back[i], expected[i]) << i;
  std::vector<std::byte> packed(quantized_bytes(x.size(), kI8));
  quantize(std::span<const float>(x), kI8, packed);
  float scale = 0;
  std::memcpy(&scale, packed.data(), sizeof(float));
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(static_cast<int8_t>(packed[4]), 127);
  EXPECT_EQ(static_cast<int8_t>(packed[4 + 8]), -127);
}

// Stochastic rounding (RoundingMode::kStochastic): with scale 1 every code
// is x rounded down or up, never further; a whole number stays itself; the
// same key packs the same bytes, another key other ones.
TEST(Quantize, StochasticCodesAreTheFloorOrCeilingAndRepeatForAKey) {
  constexpr QuantFormat kSr{.codes = Quantization::kInt8, .rounding = RoundingMode::kStochastic};
  const std::vector<float> x = {127.0f, 0.25f, -2.75f, 3.0f, -0.5f, 100.125f, -127.0f};
  const auto pack = [&](uint64_t key) {
    std::vector<std::byte> packed(quantized_bytes(x.size(), kSr));
    quantize(std::span<const float>(x), kSr, packed, key);
    return packed;
  };
  bool other_key_differs = false;
  for (uint64_t key = 0; key < 64; ++key) {
    const std::vector<std::byte> packed = pack(key);
    EXPECT_EQ(packed, pack(key)) << "key " << key;
    other_key_differs = other_key_differs || packed != pack(key + 1);
    std::vector<float> back(x.size());
    dequantize(packed, x.size(), kSr, 0, back);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(back[i] == std::floor(x[i]) || back[i] == std::ceil(x[i])) << x[i] << " -> " << back[i];
    }
    EXPECT_EQ(back[0], 127.0f);
    EXPECT_EQ(back[3], 3.0f);
  }
  EXPECT_TRUE(other_key_differs);
}

// Unbiased: over many keys a value's dequantized mean is the value (a
// Bernoulli(0.3) mean over 4000 draws: standard error 0.0072, so 0.03 is
// four of them; the keys are fixed, so the test is too). Nearest rounding
// gives 0 every time.
TEST(Quantize, StochasticRoundingIsUnbiased) {
  constexpr QuantFormat kSr{.codes = Quantization::kInt8, .rounding = RoundingMode::kStochastic};
  const std::vector<float> x = {127.0f, 0.3f, -41.7f};
  double sum = 0, sum_negative = 0;
  constexpr int kKeys = 4000;
  for (uint64_t key = 0; key < kKeys; ++key) {
    std::vector<std::byte> packed(quantized_bytes(x.size(), kSr));
    quantize(std::span<const float>(x), kSr, packed, key * 7919);
    std::vector<float> back(x.size());
    dequantize(packed, x.size(), kSr, 0, back);
    sum += back[1];
    sum_negative += back[2];
  }
  EXPECT_NEAR(sum / kKeys, 0.3, 0.03);
  EXPECT_NEAR(sum_negative / kKeys, -41.7, 0.03);
  EXPECT_EQ(round_trip(x, kI8)[1], 0.0f);
}

// The draws follow (key, element index in the buffer), not the range
// packed: a shard's blocks get the codes the whole buffer's same blocks get,
// so the ranks of a gather need no agreement but the key.
TEST(Quantize, StochasticDrawsFollowTheElementNotTheRange) {
  constexpr QuantFormat kSr{.codes = Quantization::kInt8, .block = 64, .rounding = RoundingMode::kStochastic};
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(256);
  for (float& v : x) v = normal(gen);
  std::vector<std::byte> whole(quantized_bytes(x.size(), kSr));
  quantize(std::span<const float>(x), kSr, whole, 42);
  const PackedRange second_half{.offset = 128, .count = 128};
  std::vector<std::byte> half(quantized_bytes(second_half, kSr));
  quantize(std::span<const float>(x).subspan(128), second_half, kSr, half, 42);
  std::vector<float> from_whole(128), from_half(128);
  dequantize(whole, x.size(), kSr, 128, from_whole);
  dequantize(half, second_half, kSr, 0, from_half);
  EXPECT_EQ(from_whole, from_half);
}

TEST(Quantize, AllZeroBlockStaysZero) {
  std::vector<float> x(600, 0.0f);
  x[300] = 127.0f;  // the second block is not zero (scale 1: exact)
  const std::vector<float> back = round_trip(x, kI8);
  for (size_t i = 0; i < 256; ++i) ASSERT_EQ(back[i], 0.0f) << i;
  EXPECT_EQ(back[300], 127.0f);
  for (size_t i = 512; i < 600; ++i) ASSERT_EQ(back[i], 0.0f) << i;
}

TEST(Quantize, TinyBlockWhoseScaleUnderflowsGoesToZero) {
  std::vector<float> x(10, std::numeric_limits<float>::denorm_min());
  x[3] = -x[3];
  const std::vector<float> back = round_trip(x, kI8);
  for (float v : back) EXPECT_EQ(v, 0.0f);  // |error| = denorm_min, the block's absmax
}

TEST(Quantize, OneHugeOutlierCostsOnlyItsBlock) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i % 17 + 1);
  x[100] = 127.0f * 8192.0f;  // about 1e6, with an exact scale of 8192
  const std::vector<float> back = round_trip(x, kI8);
  EXPECT_EQ(back[100], x[100]);
  // Its block's other values are below half a step (4096) and vanish...
  for (size_t i = 0; i < 256; ++i) {
    if (i != 100) {
      ASSERT_EQ(back[i], 0.0f) << i;
    }
  }
  // ...the next block keeps its own resolution.
  for (size_t i = 256; i < 512; ++i) {
    ASSERT_NEAR(back[i], x[i], 0.5 * 0.017 / 127 * 1.001) << i;
  }
}

TEST(Quantize, NonFiniteMakesItsWholeBlockNan) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (Quantization q : {Quantization::kInt8, Quantization::kInt4}) {
      const float v = static_cast<float>(quantization_max_code(q)) / 512.0f;  // an exact scale of 2^-9
      std::vector<float> x(700, v);
      x[300] = bad;
      const std::vector<float> back = round_trip(x, {.codes = q});
      for (size_t i = 0; i < 256; ++i) ASSERT_EQ(back[i], v) << i;
      for (size_t i = 256; i < 512; ++i) {
        ASSERT_TRUE(std::isnan(back[i])) << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(back[i]) & 0x7FFFFFFFu, 0x7FC00000u) << i;  // canonical quiet NaN
      }
      for (size_t i = 512; i < 700; ++i) ASSERT_EQ(back[i], v) << i;
    }
  }
}

TEST(Quantize, Int4PacksTwoCodesPerByteLowNibbleFirst) {
  const std::vector<float> x = {7.0f, -7.0f, 1.0f, -1.0f, 3.0f};
  std::vector<std::byte> packed(quantized_bytes(x.size(), kI4));
  ASSERT_EQ(packed.size(), 4u + 3);
  quantize(std::span<const float>(x), kI4, packed);
  EXPECT_EQ(static_cast<uint8_t>(packed[4]), 0x97);  // 7 low, -7 (0x9) high
  EXPECT_EQ(static_cast<uint8_t>(packed[5]), 0xF1);  // 1 low, -1 (0xF) high
  EXPECT_EQ(static_cast<uint8_t>(packed[6]), 0x03);  // 3, and a zero nibble
  std::vector<float> back(x.size());
  dequantize(packed, x.size(), kI4, 0, back);
  EXPECT_EQ(back, x);
}

TEST(Quantize, LowPrecisionInputsAreWidenedExactly) {
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  std::vector<BFloat16> b(x.size());
  convert(std::span<const float>(x), std::span<BFloat16>(b));
  std::vector<float> widened(x.size());
  convert(std::span<const BFloat16>(b), std::span<float>(widened));
  std::vector<std::byte> from_bf16(quantized_bytes(x.size(), kI8));
  quantize(std::span<const BFloat16>(b), kI8, from_bf16);
  std::vector<std::byte> from_fp32(from_bf16.size());
  quantize(std::span<const float>(widened), kI8, from_fp32);
  EXPECT_EQ(from_bf16, from_fp32);
  // dequantize_into rounds once to the output dtype.
  std::vector<BFloat16> out(x.size());
  dequantize_into(from_bf16, kI8, std::span<BFloat16>(out));
  std::vector<float> fp32_out(x.size());
  dequantize(from_bf16, x.size(), kI8, 0, fp32_out);
  std::vector<BFloat16> rounded(x.size());
  convert(std::span<const float>(fp32_out), std::span<BFloat16>(rounded));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[i].bits, rounded[i].bits) << i;
}

TEST(Quantize, PartialDequantizeMatchesTheWhole) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 37) - 18.0f;
  std::vector<std::byte> packed(quantized_bytes(x.size(), kI4));
  quantize(std::span<const float>(x), kI4, packed);
  std::vector<float> whole(x.size()), part(1000 - 512);
  dequantize(packed, x.size(), kI4, 0, whole);
  dequantize(packed, x.size(), kI4, 512, part);
  for (size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], whole[512 + i]) << i;
  EXPECT_THROW(dequantize(packed, x.size(), kI4, 100, part), ShapeError);  // not block-aligned
}

// A LayerNorm's gains (near 1) and its biases (near 0.01) in one buffer:
// with the tensor start, the biases get a block of their own and keep their
// resolution; without it, the block they share with the gains has a step of
// 1/127 and rounds most of them to zero.
TEST(Quantize, BlocksEndAtTensorStarts) {
  std::vector<float> x(640);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t i = 0; i < 320; ++i) x[i] = 1.0f + 0.1f * u(rng);
  for (size_t i = 320; i < 640; ++i) x[i] = 0.01f * u(rng);
  const std::vector<uint64_t> starts = {0, 320};
  const PackedRange split{.count = x.size(), .tensor_starts = starts};
  EXPECT_EQ(quantized_blocks(split, kI8), 4u);  // 320 = 256 + 64, twice
  EXPECT_EQ(quantized_blocks({.count = x.size()}, kI8), 3u);
  std::vector<std::byte> packed(quantized_bytes(split, kI8));
  EXPECT_EQ(packed.size(), 4u * 4 + 640);
  quantize(std::span<const float>(x), split, kI8, packed);
  std::vector<float> back(x.size());
  dequantize(packed, split, kI8, 0, back);
  float bias_absmax = 0;
  for (size_t i = 320; i < 640; ++i) bias_absmax = std::max(bias_absmax, std::fabs(x[i]));
  size_t zeroed = 0;
  for (size_t i = 320; i < 640; ++i) {
    EXPECT_LE(std::fabs(back[i] - x[i]), bias_absmax / 127 * 0.5f * 1.0001f) << i;
    zeroed += x[i] != 0 && back[i] == 0 ? 1 : 0;
  }
  EXPECT_LT(zeroed, 5u);  // only biases within half a step of their own block's scale
  const std::vector<float> mixed = round_trip(x, kI8);
  size_t mixed_zeroed = 0;
  for (size_t i = 320; i < 512; ++i) mixed_zeroed += mixed[i] == 0 ? 1 : 0;
  EXPECT_GT(mixed_zeroed, 50u);  // of 192: the shared block's step is about 0.0087
}

// A range inside its buffer is cut at the tensor starts inside it, and each
// piece into blocks from the piece's first element.
TEST(Quantize, PiecesStartAtTheRangeOrATensor) {
  const std::vector<uint64_t> starts = {0, 320, 640};
  // [100, 320): 220 elements, 1 block; [320, 600): 280 elements, 2 blocks.
  const PackedRange r{.offset = 100, .count = 500, .tensor_starts = starts};
  EXPECT_EQ(quantized_blocks(r, kI8), 3u);
  EXPECT_EQ(quantized_bytes(r, kI8), 4u * 3 + 500);
  EXPECT_EQ(quantized_bytes(r, kI4), 4u * 3 + 250);
  // Starts outside the range, or at its first element, cut nothing.
  EXPECT_EQ(quantized_blocks({.offset = 320, .count = 320, .tensor_starts = starts}, kI8), 2u);
  EXPECT_EQ(shard_part(1000, 2, 1, starts).offset, 500u);
  EXPECT_EQ(quantized_blocks(shard_part(1000, 2, 1, starts), kI8), 3u);  // [500, 640), then [640, 1000) in 2
  const std::vector<uint64_t> unsorted = {0, 640, 320};
  EXPECT_THROW(quantized_blocks({.count = 1000, .tensor_starts = unsorted}, kI8), ShapeError);
}

TEST(Quantize, WholeBlocksEndAtABlockEnd) {
  const std::vector<uint64_t> starts = {0, 300};
  // Blocks [0, 256) [256, 300) [300, 556) [556, 812) [812, 1000).
  const PackedRange r{.count = 1000, .tensor_starts = starts};
  EXPECT_EQ(whole_blocks(r, kI8, 0, 2048), 1000u);
  EXPECT_EQ(whole_blocks(r, kI8, 0, 256), 256u);
  EXPECT_EQ(whole_blocks(r, kI8, 256, 256), 44u);
  EXPECT_EQ(whole_blocks(r, kI8, 300, 600), 512u);
  EXPECT_THROW(whole_blocks(r, kI8, 100, 2048), ShapeError);  // not a block start
  EXPECT_THROW(whole_blocks(r, kI8, 0, 100), ShapeError);     // shorter than a block
  // Partial dequantization, a run at a time, equals the whole.
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 37) - 18.0f + (i >= 300 ? 0.0f : 100.0f);
  std::vector<std::byte> packed(quantized_bytes(r, kI4));
  quantize(std::span<const float>(x), r, kI4, packed);
  std::vector<float> whole(x.size()), runs(x.size());
  dequantize(packed, r, kI4, 0, whole);
  for (size_t first = 0; first < x.size();) {
    const size_t n = whole_blocks(r, kI4, first, 300);
    dequantize(packed, r, kI4, first, std::span<float>(runs.data() + first, n));
    first += n;
  }
  EXPECT_EQ(runs, whole);
  std::vector<float> part(10);
  EXPECT_THROW(dequantize(packed, r, kI4, 512, part), ShapeError);  // 512 is inside the block [300, 556)
}

// The packed bytes, and the values they unpack to, against the format's
// definition written out here with std::nearbyint (comm/quantize.h), the
// reference for the codec's vectorised loops: blocks cut at the
// range's start and at tensor starts (odd ones too, so int4 blocks start
// and end inside a byte), random magnitudes per block, exact ties, signed
// zeros, subnormal and underflowing blocks, an infinity and a NaN.
struct Packed {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // code * scale per element
};
Packed packed_by_definition(const std::vector<float>& x, const PackedRange& r, QuantFormat f) {
  const int qmax = quantization_max_code(f.codes);
  std::vector<uint64_t> cuts = {0};  // piece starts, relative to the range
  for (const uint64_t t : r.tensor_starts) {
    if (t > r.offset && t < r.offset + r.count) cuts.push_back(t - r.offset);
  }
  cuts.push_back(r.count);
  std::vector<float> scales;
  std::vector<int> codes(r.count);
  std::vector<float> values(r.count);
  for (size_t p = 0; p + 1 < cuts.size(); ++p) {
    for (uint64_t b = cuts[p]; b < cuts[p + 1]; b += f.block) {
      const uint64_t e = std::min<uint64_t>(b + f.block, cuts[p + 1]);
      float absmax = 0;
      bool finite = true;
      for (uint64_t i = b; i < e; ++i) {
        finite = finite && std::isfinite(x[i]);
        absmax = std::max(absmax, std::fabs(x[i]));
      }
      const float scale = finite ? absmax / static_cast<float>(qmax) : std::bit_cast<float>(0x7FC00000u);
      scales.push_back(scale);
      for (uint64_t i = b; i < e; ++i) {
        codes[i] = scale > 0 ? static_cast<int>(std::clamp(std::nearbyint(x[i] / scale), static_cast<float>(-qmax),
                                                           static_cast<float>(qmax)))
                             : 0;
        values[i] = static_cast<float>(codes[i]) * scale;
      }
    }
  }
  std::vector<std::byte> out(scales.size() * sizeof(float) +
                             (f.codes == Quantization::kInt8 ? r.count : (r.count + 1) / 2));
  std::memcpy(out.data(), scales.data(), scales.size() * sizeof(float));
  std::byte* c = out.data() + scales.size() * sizeof(float);
  for (uint64_t i = 0; i < r.count; ++i) {
    if (f.codes == Quantization::kInt8) {
      c[i] = static_cast<std::byte>(static_cast<int8_t>(codes[i]));
    } else {
      c[i / 2] |= static_cast<std::byte>((codes[i] & 0x0F) << (i % 2 == 0 ? 0 : 4));
    }
  }
  return {.bytes = out, .values = values};
}

TEST(Quantize, PackedBytesAndValuesEqualTheFormatsDefinition) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 60);
  std::vector<float> x(5000);
  for (size_t i = 0; i < x.size(); i += 100) {  // runs of 100 at one magnitude, so blocks mix them
    const float m = std::ldexp(1.0f, exponent(rng));
    for (size_t j = i; j < i + 100; ++j) x[j] = m * u(rng);
  }
  for (size_t i = 1000; i < 1032; ++i) x[i] = static_cast<float>(i % 2 == 0 ? 127 : -127) + 0.0f;
  for (size_t i = 1032; i < 1100; ++i) x[i] = static_cast<float>(static_cast<int>(i % 9) - 4) + 0.5f;  // ties
  for (size_t i = 1100; i < 1200; ++i) x[i] = i % 2 == 0 ? -0.0f : 0.0f;
  for (size_t i = 1200; i < 1300; ++i) x[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i % 5);
  x[2100] = std::numeric_limits<float>::infinity();
  x[3333] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<uint64_t> starts = {0, 1031, 1100, 2047, 2048, 3001};
  for (const Quantization q : {Quantization::kInt8, Quantization::kInt4}) {
    for (const uint32_t block : {32u, 256u, 2048u}) {
      for (const uint64_t offset : {0ul, 1ul, 777ul}) {
        const QuantFormat f{.codes = q, .block = block};
        const PackedRange r{.offset = offset, .count = x.size() - offset - 3, .tensor_starts = starts};
        const std::vector<float> part(x.begin() + static_cast<std::ptrdiff_t>(offset),
                                      x.begin() + static_cast<std::ptrdiff_t>(offset + r.count));
        std::vector<std::byte> packed(quantized_bytes(r, f));
        quantize(std::span<const float>(part), r, f, packed);
        const Packed expected = packed_by_definition(part, r, f);
        ASSERT_EQ(packed.size(), expected.bytes.size());
        size_t differ = 0;
        for (size_t i = 0; i < packed.size(); ++i) differ += packed[i] != expected.bytes[i] ? 1 : 0;
        EXPECT_EQ(differ, 0u) << quantization_name(q) << ", block " << block << ", offset " << offset;
        std::vector<float> back(r.count);
        dequantize(packed, r, f, 0, back);
        differ = 0;
        for (size_t i = 0; i < back.size(); ++i) {
          differ += std::bit_cast<uint32_t>(back[i]) != std::bit_cast<uint32_t>(expected.values[i]) ? 1 : 0;
        }
        EXPECT_EQ(differ, 0u) << "unpacked, " << quantization_name(q) << ", block " << block << ", offset " << offset;
      }
    }
  }
}

TEST(Quantize, ScratchFormulas) {
  // 10 elements over 4 ranks: shards 3, 3, 2, 2.
  EXPECT_EQ(all_gather_quantized_scratch(10, 4, kI8), (4u + 3) * 2 + (4u + 2) * 2);
  EXPECT_EQ(reduce_scatter_quantized_scratch(10, 4, 0, kI8), 4u * 5 * kReduceChunk + 26 + 4 * (4u + 3));
  EXPECT_EQ(reduce_scatter_quantized_scratch(10, 4, 3, kI8), 4u * 5 * kReduceChunk + 26 + 4 * (4u + 2));
  EXPECT_EQ(kReduceChunk, 2048u);
  const std::vector<uint64_t> counts = {10, 1000};
  EXPECT_EQ(max_quantized_scratch(counts, 4, 0, kI8, kPlain), all_gather_quantized_scratch(1000, 4, kI8));
  EXPECT_EQ(max_quantized_scratch(counts, 4, 0, kPlain, kPlain), 0u);
  // 1000 elements over 4 ranks in blocks of 64: 4 scales per 250-element shard.
  const QuantFormat i8_64{.codes = Quantization::kInt8, .block = 64};
  EXPECT_EQ(all_gather_quantized_scratch(1000, 4, i8_64), 4u * (16 + 250));
  // With tensor starts: a start at 300 cuts shard 1 ([250, 500)) in two:
  // 50 + 200 elements, 1 + 4 blocks of 64 against 4.
  const std::vector<std::vector<uint64_t>> tensors = {{0, 300}};
  EXPECT_EQ(all_gather_quantized_scratch(1000, 4, i8_64, tensors[0]), 4u * (17 + 250));
  EXPECT_EQ(max_quantized_scratch(std::vector<uint64_t>{1000}, 4, 1, kPlain, i8_64, tensors),
            4u * 5 * kReduceChunk + 4u * (17 + 250) + 4 * (4u * 5 + 250));
}

}  // namespace
}  // namespace zerodp::comm
