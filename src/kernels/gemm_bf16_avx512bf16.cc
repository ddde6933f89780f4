// SPDX-License-Identifier: Apache-2.0
// The avx512bf16 level's bf16 product code (gemm_bf16_kernels.h): packing
// with vcvtne2ps2bf16 (the conversion operand_bits() writes out) and the
// tile with vdpbf16ps, two registers of 16 columns per row and one
// broadcast pair of A per row and step (12 rows, 24 accumulators: 17-19%
// more throughput than 8 rows in a loop over packed tiles of 64-256 pairs,
// measured on a Zen 5).
#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels::bf16_gemm {
namespace {

__mmask16 first(int count) {
  count = std::clamp(count, 0, 16);
  return static_cast<__mmask16>(count == 16 ? 0xFFFFu : (1u << count) - 1u);
}

// Rows contiguous along k: 32 values of a row make 16 pairs at once.
void pack_along_k(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out) {
  const int pairs = (k + 1) / 2;
  const int panels = (rows + width - 1) / width;
  alignas(64) uint32_t words[16];
  for (int t = 0; t < panels; ++t) {
    for (int r = 0; r < width; ++r) {
      uint32_t* dst = out + static_cast<size_t>(t) * pairs * width + r;
      const int row = t * width + r;
      if (row >= rows) {
        for (int p = 0; p < pairs; ++p) dst[static_cast<size_t>(p) * width] = 0;
        continue;
      }
      const float* src = x.data + static_cast<size_t>(row0 + row) * x.ld;
      for (int p = 0; p < pairs; p += 16) {
        const int kk = 2 * p;
        const __m512 even_half = _mm512_maskz_loadu_ps(first(k - kk), src + kk);
        const __m512 odd_half = _mm512_maskz_loadu_ps(first(k - kk - 16), src + kk + 16);
        _mm512_store_si512(words, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd_half, even_half)));
        const int count = std::min(16, pairs - p);
        for (int q = 0; q < count; ++q) dst[static_cast<size_t>(p + q) * width] = words[q];
      }
    }
  }
}

// Rows contiguous across rows (the matrix stored transposed): up to 16 rows'
// even and odd values of one pair, interleaved into as many words.
void pack_across_rows(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out) {
  const int pairs = (k + 1) / 2;
  const int panels = (rows + width - 1) / width;
  const int chunk = std::min(width, 16);
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int t = 0; t < panels; ++t) {
    for (int c0 = 0; c0 < width; c0 += chunk) {
      const int row = t * width + c0;
      const __mmask16 valid = first(std::min(chunk, rows - row));
      const __mmask16 lanes = first(chunk);
      const float* src = x.data + row0 + row;
      for (int p = 0; p < pairs; ++p) {
        const int kk = 2 * p;
        const float* even_src = src + static_cast<size_t>(kk) * x.ld;
        const __m512 even = _mm512_maskz_loadu_ps(valid, even_src);
        const __m512 odd = kk + 1 < k ? _mm512_maskz_loadu_ps(valid, even_src + x.ld) : _mm512_setzero_ps();
        const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));
        _mm512_mask_storeu_epi32(out + (static_cast<size_t>(t) * pairs + p) * width + c0, lanes,
                                 _mm512_permutexvar_epi16(interleave, halves));
      }
    }
  }
}

}  // namespace

void pack_avx512bf16(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out) {
  if (x.by_columns) {
    pack_across_rows(x, row0, rows, k, width, out);
  } else {
    pack_along_k(x, row0, rows, k, width, out);
  }
}

void tile_avx512bf16(int pairs, const uint32_t* a, const uint32_t* b, float* tile, bool accumulate) {
  static_assert(kTileCols == 32, "two registers of 16 columns");
  __m512 acc[kTileRows][2];
  for (int r = 0; r < kTileRows; ++r) {
    acc[r][0] = accumulate ? _mm512_loadu_ps(tile + static_cast<size_t>(r) * kTileCols) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_loadu_ps(tile + static_cast<size_t>(r) * kTileCols + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < pairs; ++p, a += kTileRows, b += kTileCols) {
    const auto b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b));
    const auto b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + 16));
    for (int r = 0; r < kTileRows; ++r) {
      const auto ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
  }
  for (int r = 0; r < kTileRows; ++r) {
    _mm512_storeu_ps(tile + static_cast<size_t>(r) * kTileCols, acc[r][0]);
    _mm512_storeu_ps(tile + static_cast<size_t>(r) * kTileCols + 16, acc[r][1]);
  }
}

}  // namespace zerodp::kernels::bf16_gemm
