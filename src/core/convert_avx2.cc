// SPDX-License-Identifier: Apache-2.0
// AVX2 + F16C conversion loops. Compiled with -mavx2 -mf16c (see
// CMakeLists.txt) and only called when the CPU has both. No inline function
// from a shared header is called here: one compiled with these flags could be
// the copy the linker keeps for everyone. Tails go through a padded buffer.
#include <immintrin.h>

#include <cstring>

#include "core/convert_kernels.h"

namespace zerodp::convert_kernels {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Eight fp32 (as bits) to eight bf16, round to nearest even, NaNs quieted.
__m256i round_to_bf16(__m256i x) {
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), odd);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

// Sixteen fp32 to sixteen bf16 (two vectors of eight, packed in order).
__m256i sixteen_to_bf16(const float* src) {
  const __m256i lo = round_to_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
  const __m256i hi = round_to_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 8)));
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
}

__m256 eight_from_bf16(const BFloat16* src) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  __m256i bits = _mm256_slli_epi32(wide, 16);
  const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
  bits = _mm256_or_si256(bits, _mm256_and_si256(is_nan, _mm256_set1_epi32(0x00400000)));
  return _mm256_castsi256_ps(bits);
}

}  // namespace

void float_to_half_avx2(const float* src, Half* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), kRound);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  if (i < n) {
    float in[8] = {};
    Half out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(_mm256_loadu_ps(in), kRound));
    std::memcpy(dst + i, out, (n - i) * sizeof(Half));
  }
}

void half_to_float_avx2(const Half* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  if (i < n) {
    Half in[8] = {};
    float out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(Half));
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

void float_to_bf16_avx2(const float* src, BFloat16* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), sixteen_to_bf16(src + i));
  }
  if (i < n) {
    float in[16] = {};
    BFloat16 out[16];
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), sixteen_to_bf16(in));
    std::memcpy(dst + i, out, (n - i) * sizeof(BFloat16));
  }
}

void bf16_to_float_avx2(const BFloat16* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, eight_from_bf16(src + i));
  if (i < n) {
    BFloat16 in[8] = {};
    float out[8];
    std::memcpy(in, src + i, (n - i) * sizeof(BFloat16));
    _mm256_storeu_ps(out, eight_from_bf16(in));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

}  // namespace zerodp::convert_kernels
