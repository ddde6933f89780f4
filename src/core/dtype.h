// SPDX-License-Identifier: Apache-2.0
// The element types zerodp stores and communicates: fp32, fp16 and bf16.
//
// Dtype is a small value type (size, name, parsing). Half and BFloat16 are
// storage-only 16-bit types: arithmetic happens in fp32 after conversion.
// Scalar conversions round to nearest even, keep subnormals, map overflow to
// infinity and quiet NaNs (sign and the payload's top bits are kept, the quiet
// bit is set), which is what the x86 conversion instructions do; see
// convert.h for the bulk, vectorised conversions that give identical bits.
// Thread-safety: all functions are pure.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zerodp {

// IEEE 754 binary16, stored as its bits.
struct Half {
  uint16_t bits = 0;
  friend bool operator==(Half, Half) = default;
};

// bfloat16 (the top half of an fp32), stored as its bits.
struct BFloat16 {
  uint16_t bits = 0;
  friend bool operator==(BFloat16, BFloat16) = default;
};

class Dtype {
 public:
  enum class Kind : uint8_t { kFp32 = 0, kFp16 = 1, kBf16 = 2 };

  constexpr Dtype() = default;
  constexpr Dtype(Kind kind) : kind_(kind) {}  // NOLINT: implicit by design

  static constexpr Dtype fp32() { return Dtype(Kind::kFp32); }
  static constexpr Dtype fp16() { return Dtype(Kind::kFp16); }
  static constexpr Dtype bf16() { return Dtype(Kind::kBf16); }

  // "fp32", "fp16" or "bf16" (also "float32", "float16", "bfloat16"), in
  // any case ("BF16", "Fp32"); name() stays lowercase. Throws ConfigError
  // naming the accepted values otherwise.
  static Dtype parse(std::string_view name);

  constexpr Kind kind() const { return kind_; }
  constexpr size_t size() const { return kind_ == Kind::kFp32 ? 4 : 2; }
  constexpr bool is_low_precision() const { return kind_ != Kind::kFp32; }
  std::string_view name() const;

  friend constexpr bool operator==(Dtype, Dtype) = default;

 private:
  Kind kind_ = Kind::kFp32;
};

// The Dtype of a C++ element type: dtype_of<float>() == Dtype::fp32().
template <typename T>
constexpr Dtype dtype_of();
template <>
constexpr Dtype dtype_of<float>() {
  return Dtype::fp32();
}
template <>
constexpr Dtype dtype_of<Half>() {
  return Dtype::fp16();
}
template <>
constexpr Dtype dtype_of<BFloat16>() {
  return Dtype::bf16();
}

// ---- scalar conversions (the reference for every vectorised path) ----

inline float half_to_float(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1Fu;
  uint32_t mantissa = h.bits & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    // Infinity, or NaN made quiet with the payload kept.
    bits = sign | 0x7F800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalise; every half subnormal is an fp32 normal.
    int shift = std::countl_zero(mantissa) - 21;  // bring the top bit to bit 10
    mantissa = (mantissa << shift) & 0x3FFu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

inline Half float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {  // NaN: quiet, keep the payload's top 9 bits
    return Half{static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu))};
  }
  if (abs >= 0x477FF000u) {  // rounds to >= 65520: infinity
    return Half{static_cast<uint16_t>(sign | 0x7C00u)};
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14)
    // Add 0.5 (as a float) so the FPU's round-to-nearest-even does the work:
    // the half subnormal's bits land in the float's low mantissa bits.
    const float magic = std::bit_cast<float>(0x3F000000u);  // 0.5
    const float shifted = std::bit_cast<float>(abs) + magic;
    return Half{static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3F000000u))};
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0x0FFFu + odd - (112u << 23);
  return Half{static_cast<uint16_t>(sign | (rounded >> 13))};
}

inline float bfloat16_to_float(BFloat16 b) {
  uint32_t bits = static_cast<uint32_t>(b.bits) << 16;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;  // quiet NaN
  return std::bit_cast<float>(bits);
}

inline BFloat16 float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return BFloat16{static_cast<uint16_t>((x >> 16) | 0x0040u)};  // quiet NaN
  }
  const uint32_t odd = (x >> 16) & 1u;
  return BFloat16{static_cast<uint16_t>((x + 0x7FFFu + odd) >> 16)};
}

// Stochastic rounding to bf16: f's magnitude goes to the bf16 above it with
// probability (dropped 16 bits) / 2^16 given a uniform `random`, else to the
// one below, so the result's expectation is f (sign and magnitude are
// separate, so negative values round the same way). Subnormals round the
// same way; a value within an ulp of the largest finite bf16 may round to
// infinity, as its probability says; infinities stay; a NaN is quieted as
// float_to_bfloat16 does.
inline BFloat16 float_to_bfloat16_stochastic(float f, uint16_t random) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) >= 0x7F800000u) return float_to_bfloat16(f);
  return BFloat16{static_cast<uint16_t>((x + random) >> 16)};
}

}  // namespace zerodp
