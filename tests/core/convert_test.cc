// SPDX-License-Identifier: Apache-2.0
#include "core/convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"

namespace zerodp {
namespace {

// Inputs that exercise every rounding branch: random bit patterns (all
// exponents, NaNs with payloads, subnormals) plus hand-picked edges.
std::vector<float> edge_and_random_floats(size_t random_count) {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x33000000, 0x33000001,
                                0x337FFFFF, 0x387FE000, 0x387FF000, 0x38800000, 0x3F800000, 0x3F801000, 0x3F803000,
                                0x3F808000, 0x3F818000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x7F7FFFFF, 0x7F7F8000,
                                0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0xFFFFFFFF, 0x7FBFFFFF, 0x3F7FFFFF};
  uint64_t state = 88172645463325252ull;
  for (size_t i = 0; i < random_count; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    bits.push_back(static_cast<uint32_t>(state));
  }
  std::vector<float> out(bits.size());
  std::memcpy(out.data(), bits.data(), bits.size() * 4);
  return out;
}

class ConvertPaths : public ::testing::TestWithParam<SimdLevel> {};

TEST_P(ConvertPaths, FloatToHalfMatchesScalarReference) {
  const auto in = edge_and_random_floats(1 << 20);
  std::vector<Half> out(in.size());
  convert(std::span<const float>(in), std::span<Half>(out), GetParam());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i].bits, float_to_half(in[i]).bits) << std::hex << std::bit_cast<uint32_t>(in[i]);
  }
}

TEST_P(ConvertPaths, FloatToBFloat16MatchesScalarReference) {
  const auto in = edge_and_random_floats(1 << 20);
  std::vector<BFloat16> out(in.size());
  convert(std::span<const float>(in), std::span<BFloat16>(out), GetParam());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i].bits, float_to_bfloat16(in[i]).bits) << std::hex << std::bit_cast<uint32_t>(in[i]);
  }
}

TEST_P(ConvertPaths, EveryHalfAndBFloat16PatternWidensLikeTheReference) {
  std::vector<Half> halves(65536);
  std::vector<BFloat16> bfloats(65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    halves[b].bits = static_cast<uint16_t>(b);
    bfloats[b].bits = static_cast<uint16_t>(b);
  }
  std::vector<float> from_half(65536), from_bf16(65536);
  convert(std::span<const Half>(halves), std::span<float>(from_half), GetParam());
  convert(std::span<const BFloat16>(bfloats), std::span<float>(from_bf16), GetParam());
  for (uint32_t b = 0; b < 65536; ++b) {
    ASSERT_EQ(std::bit_cast<uint32_t>(from_half[b]), std::bit_cast<uint32_t>(half_to_float(halves[b]))) << b;
    ASSERT_EQ(std::bit_cast<uint32_t>(from_bf16[b]), std::bit_cast<uint32_t>(bfloat16_to_float(bfloats[b]))) << b;
  }
}

// Every tail length (0..33) so masked and padded tails are exercised, with
// guard elements after the end that must stay untouched.
TEST_P(ConvertPaths, TailsWriteExactlyTheirElements) {
  for (size_t n = 0; n < 34; ++n) {
    std::vector<float> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = 0.37f * static_cast<float>(i) - 3.0f;
    std::vector<Half> h(n + 4, Half{0xABCD});
    std::vector<BFloat16> b(n + 4, BFloat16{0xABCD});
    std::vector<float> back(n + 4, 7.0f);
    convert(std::span<const float>(in), std::span<Half>(h.data(), n), GetParam());
    convert(std::span<const float>(in), std::span<BFloat16>(b.data(), n), GetParam());
    convert(std::span<const Half>(h.data(), n), std::span<float>(back.data(), n), GetParam());
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], half_to_float(float_to_half(in[i])));
    for (size_t i = n; i < n + 4; ++i) {
      EXPECT_EQ(h[i].bits, 0xABCD);
      EXPECT_EQ(b[i].bits, 0xABCD);
      EXPECT_EQ(back[i], 7.0f);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, ConvertPaths, ::testing::ValuesIn(supported_simd_levels()), [](const auto& info) {
  std::string name = simd_level_name(info.param);
  for (auto& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

TEST(Convert, TypeErasedFormAndMismatch) {
  const std::vector<float> in = {1.0f, -0.5f, 3.14159f};
  std::vector<uint16_t> h(3), b(3), b_from_h(3);
  convert(in.data(), Dtype::fp32(), h.data(), Dtype::fp16(), 3);
  convert(in.data(), Dtype::fp32(), b.data(), Dtype::bf16(), 3);
  convert(h.data(), Dtype::fp16(), b_from_h.data(), Dtype::bf16(), 3);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h[i], float_to_half(in[i]).bits);
    EXPECT_EQ(b[i], float_to_bfloat16(in[i]).bits);
    EXPECT_EQ(b_from_h[i], float_to_bfloat16(half_to_float(Half{h[i]})).bits);
  }
  std::vector<Half> small(2);
  EXPECT_THROW(convert(std::span<const float>(in), std::span<Half>(small)), ShapeError);
}

}  // namespace
}  // namespace zerodp
