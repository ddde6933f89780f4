// SPDX-License-Identifier: Apache-2.0
// AVX-512F/BW conversion loops. Compiled with -mavx512f -mavx512bw (see
// CMakeLists.txt) and only called when the CPU has both. Tails use masked
// loads and stores; no inline function from a shared header is called here.
#include <immintrin.h>

#include "core/convert_kernels.h"

namespace zerodp::convert_kernels {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__mmask16 tail_mask(size_t remaining) { return static_cast<__mmask16>((1u << remaining) - 1u); }

// Sixteen fp32 (as bits) to sixteen bf16: round to nearest even, NaNs quieted.
__m256i to_bf16(__m512i x) {
  const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7F800000));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd);
  __m512i result = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  result = _mm512_mask_mov_epi32(result, is_nan, quiet);
  return _mm512_cvtepi32_epi16(result);
}

__m512 from_bf16(__m256i b) {
  const __m512i bits = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
  const __m512i abs = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7F800000));
  return _mm512_castsi512_ps(_mm512_mask_or_epi32(bits, is_nan, bits, _mm512_set1_epi32(0x00400000)));
}

}  // namespace

void float_to_half_avx512(const float* src, Half* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), kRound));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), kRound);
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}

void half_to_float_avx512(const Half* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

void float_to_bf16_avx512(const float* src, BFloat16* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), to_bf16(_mm512_loadu_si512(src + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(dst + i, m, to_bf16(_mm512_maskz_loadu_epi32(m, src + i)));
  }
}

void bf16_to_float_avx512(const BFloat16* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, from_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(dst + i, m, from_bf16(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

}  // namespace zerodp::convert_kernels
