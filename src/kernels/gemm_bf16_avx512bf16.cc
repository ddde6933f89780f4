// SPDX-License-Identifier: Apache-2.0
// The avx512bf16 level's bf16 product code (gemm_bf16_kernels.h): packing
// with vcvtne2ps2bf16 (the conversion operand_bits() writes out; rows along
// k transposed 16 x 16 words at a time in registers), or for bf16 sources
// the same rule on their bits (bf16_operands()), and the tile with
// vdpbf16ps, two registers of 16 columns per row and one broadcast pair of
// A per row and step (12 rows, 24 accumulators: 17-19% more throughput than
// 8 rows in a loop over packed tiles of 64-256 pairs, measured on a Zen 5).
#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels::bf16_gemm {
namespace {

__mmask16 first(int count) {
  count = std::clamp(count, 0, 16);
  return static_cast<__mmask16>(count == 16 ? 0xFFFFu : (1u << count) - 1u);
}

// 16 rows of 16 words in, 16 columns out: r[q] becomes the words q of the
// rows. Pairs of rows interleaved, then pairs of pairs, then the 128-bit
// lanes of four rows gathered.
void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);      // lane L: r_i[4L], r_i+1[4L], r_i[4L+1], r_i+1[4L+1]
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);  // lane L: the same of words 4L+2 and 4L+3
  }
  __m512i u[16];  // u[4g + j], lane L: word 4L + j of rows 4g..4g+3
  for (int g = 0; g < 4; ++g) {
    const __m512i* s = t + static_cast<size_t>(4) * g;
    u[4 * g + 0] = _mm512_unpacklo_epi64(s[0], s[2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(s[0], s[2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(s[1], s[3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(s[1], s[3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i even_lanes01 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);  // lanes 0, 2 of groups 0, 1
    const __m512i odd_lanes01 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);   // lanes 1, 3
    const __m512i even_lanes23 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i odd_lanes23 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_i32x4(even_lanes01, even_lanes23, 0x88);      // lane 0 of every group
    r[8 + j] = _mm512_shuffle_i32x4(even_lanes01, even_lanes23, 0xDD);  // lane 2
    r[4 + j] = _mm512_shuffle_i32x4(odd_lanes01, odd_lanes23, 0x88);    // lane 1
    r[12 + j] = _mm512_shuffle_i32x4(odd_lanes01, odd_lanes23, 0xDD);   // lane 3
  }
}

// How far ahead the packing asks for its source (prefetch): its reads run
// at the memory's latency otherwise (the operands come from DRAM or L3, and
// the hardware's prefetcher does not follow 12-32 rows at once): about 15%
// more throughput over gpt2-124m's products, measured on a Zen 5.
constexpr int kAheadValues = 128;  // along a row: 4 chunks of 32 values
constexpr int kAheadRows = 8;      // across rows: the next group of 4 pairs

template <typename T>
void prefetch_span(const T* begin, int count) {
  const char* bytes = reinterpret_cast<const char*>(begin);
  for (size_t offset = 0; offset < count * sizeof(T); offset += 64) _mm_prefetch(bytes + offset, _MM_HINT_T0);
}

// 32 bf16 values (16-bit lanes) made operands as operand_bits() makes their
// fp32 widening: a subnormal the zero of its sign, a NaN quieted; every
// other bf16 value is its own operand (its widening rounds to itself).
__m512i bf16_operands(__m512i v) {
  const __m512i abs = _mm512_and_si512(v, _mm512_set1_epi32(0x7FFF7FFF));
  const __mmask32 subnormal = _mm512_cmplt_epu16_mask(abs, _mm512_set1_epi32(0x00800080));
  const __mmask32 nan = _mm512_cmpgt_epu16_mask(abs, _mm512_set1_epi32(0x7F807F80));
  v = _mm512_mask_mov_epi16(v, subnormal, _mm512_andnot_si512(_mm512_set1_epi32(0x7FFF7FFF), v));
  return _mm512_mask_mov_epi16(v, nan, _mm512_or_si512(v, _mm512_set1_epi32(0x00400040)));
}

// One row's values kk..kk+31 along k (the first `count` of them; zeros
// past) as the words of 16 pairs: the even value in the low half.
__m512i row_words(const float* row, int count) {
  const __m512 lo = _mm512_maskz_loadu_ps(first(count), row);
  const __m512 hi = _mm512_maskz_loadu_ps(first(count - 16), row + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}
__m512i row_words(const BFloat16* row, int count) {
  // bf16 values stored in order are already pairs in the words' order.
  count = std::clamp(count, 0, 32);
  const auto valid = static_cast<__mmask32>(count == 32 ? ~0u : (1u << count) - 1u);
  return bf16_operands(_mm512_maskz_loadu_epi16(valid, row));
}

// Rows contiguous along k: 32 values of each of 16 rows make 16 pairs of
// each, transposed in registers into 16 pairs of 16 rows.
template <typename T>
void pack_along_k(const T* data, const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out) {
  const int pairs = (k1 - k0 + 1) / 2;
  const int panels = (rows + width - 1) / width;
  for (int t = 0; t < panels; ++t) {
    uint32_t* panel = out + static_cast<size_t>(t) * pairs * width;
    for (int g0 = 0; g0 < width; g0 += 16) {
      const int group = std::min(16, width - g0);  // rows of the panel in this group
      const int valid = std::clamp(rows - (t * width + g0), 0, group);
      const __mmask16 lanes = first(group);
      const T* src = valid > 0 ? data + static_cast<size_t>(row0 + t * width + g0) * x.ld : data;
      for (int p = 0; p < pairs; p += 16) {
        const int kk = k0 + 2 * p;
        if (kk + kAheadValues < k1) {
          for (int i = 0; i < valid; ++i) prefetch_span(src + static_cast<size_t>(i) * x.ld + kk + kAheadValues, 32);
        }
        __m512i words[16];
        for (int i = 0; i < 16; ++i) {
          words[i] = i < valid ? row_words(src + static_cast<size_t>(i) * x.ld + kk, k1 - kk) : _mm512_setzero_si512();
        }
        transpose16(words);
        const int count = std::min(16, pairs - p);
        uint32_t* dst = panel + static_cast<size_t>(p) * width + g0;
        for (int q = 0; q < count; ++q) _mm512_mask_storeu_epi32(dst + static_cast<size_t>(q) * width, lanes, words[q]);
      }
    }
  }
}

// Up to 16 rows' operands of one pair's even values (16-bit lanes 0-15)
// and odd ones (16-31), each stored contiguous across rows; zeros past
// `valid` and for a missing odd value.
__m512i pair_halves(const float* even, const float* odd, __mmask16 valid) {
  const __m512 lo = _mm512_maskz_loadu_ps(valid, even);
  const __m512 hi = odd != nullptr ? _mm512_maskz_loadu_ps(valid, odd) : _mm512_setzero_ps();
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}
__m512i pair_halves(const BFloat16* even, const BFloat16* odd, __mmask16 valid) {
  const __m256i lo = _mm256_maskz_loadu_epi16(valid, even);
  const __m256i hi = odd != nullptr ? _mm256_maskz_loadu_epi16(valid, odd) : _mm256_setzero_si256();
  return bf16_operands(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}

// Up to 16 rows' words of one pair: its halves interleaved.
template <typename T>
__m512i pair_words(const T* even, const T* odd, __mmask16 valid) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, pair_halves(even, odd, valid));
}

// Rows contiguous across rows (the matrix stored transposed): for each pair,
// up to 16 rows' words at once, along the stored rows (k) and then across
// them. Panels of kTileRows take 4 pairs at a time (8 stored rows), their
// 48 words per panel written as 3 whole registers: 12-word stores to 16
// panels in turn ran at half the rate.
template <typename T>
void pack_across_rows(const T* data, const PackSource& x, int row0, int rows, int k0, int k1, int width,
                      uint32_t* out) {
  const int pairs = (k1 - k0 + 1) / 2;
  const int panels = (rows + width - 1) / width;
  const int chunk = std::min(width, 16);
  const __mmask16 lanes = first(chunk);
  const auto stored_row = [&](int kk) { return data + static_cast<size_t>(kk) * x.ld + row0; };
  int p = 0;
  if (width == kTileRows) {
    // 12 words of 4 pairs into 3 registers: w0[0..11] w1[0..3] | w1[4..11] w2[0..7] | w2[8..11] w3[0..11].
    const __m512i join01 = _mm512_set_epi32(19, 18, 17, 16, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i join12 = _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 11, 10, 9, 8, 7, 6, 5, 4);
    const __m512i join23 = _mm512_set_epi32(27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 11, 10, 9, 8);
    for (; p + 4 <= pairs && k0 + 2 * p + 8 <= k1; p += 4) {
      const int kk = k0 + 2 * p;
      if (kk + 8 + kAheadRows <= k1) {
        for (int i = 8; i < 8 + kAheadRows; ++i) prefetch_span(stored_row(kk + i), rows);
      }
      for (int t = 0; t < panels; ++t) {
        const int row = t * width;
        const __mmask16 valid = first(std::min(width, rows - row));
        __m512i w[4];
        for (int q = 0; q < 4; ++q)
          w[q] = pair_words(stored_row(kk + 2 * q) + row, stored_row(kk + 2 * q + 1) + row, valid);
        uint32_t* dst = out + (static_cast<size_t>(t) * pairs + p) * width;
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi32(w[0], join01, w[1]));
        _mm512_storeu_si512(dst + 16, _mm512_permutex2var_epi32(w[1], join12, w[2]));
        _mm512_storeu_si512(dst + 32, _mm512_permutex2var_epi32(w[2], join23, w[3]));
      }
    }
  }
  for (; p < pairs; ++p) {
    const int kk = k0 + 2 * p;
    if (kk + kAheadRows + 1 < k1) {
      prefetch_span(stored_row(kk + kAheadRows), rows);
      prefetch_span(stored_row(kk + kAheadRows + 1), rows);
    }
    const T* even = stored_row(kk);
    const T* odd = kk + 1 < k1 ? stored_row(kk + 1) : nullptr;
    for (int t = 0; t < panels; ++t) {
      for (int c0 = 0; c0 < width; c0 += chunk) {
        const int row = t * width + c0;
        const __mmask16 valid = first(std::min(chunk, rows - row));
        _mm512_mask_storeu_epi32(out + (static_cast<size_t>(t) * pairs + p) * width + c0, lanes,
                                 pair_words(even + row, odd != nullptr ? odd + row : nullptr, valid));
      }
    }
  }
}

}  // namespace

void pack_avx512bf16(const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out) {
  if (x.bf16 != nullptr) {
    if (x.by_columns) {
      pack_across_rows(x.bf16, x, row0, rows, k0, k1, width, out);
    } else {
      pack_along_k(x.bf16, x, row0, rows, k0, k1, width, out);
    }
  } else if (x.by_columns) {
    pack_across_rows(x.data, x, row0, rows, k0, k1, width, out);
  } else {
    pack_along_k(x.data, x, row0, rows, k0, k1, width, out);
  }
}

void tile_avx512bf16(int pairs, const uint32_t* a, const uint32_t* b, const TileOut& out) {
  static_assert(kTileCols == 32, "two registers of 16 columns");
  const __mmask16 left = first(out.cols), right = first(out.cols - 16);
  __m512 acc[kTileRows][2];
  for (int r = 0; r < kTileRows; ++r) {
    const float* sums = out.sums + static_cast<size_t>(r) * out.ld;
    const bool load = out.accumulate && r < out.rows;
    acc[r][0] = load ? _mm512_maskz_loadu_ps(left, sums) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_maskz_loadu_ps(right, sums + 16) : _mm512_setzero_ps();
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
  const int rows = std::min(out.rows, kTileRows);
  if (!out.last) {
    for (int r = 0; r < rows; ++r) {
      float* sums = out.sums + static_cast<size_t>(r) * out.ld;
      _mm512_mask_storeu_ps(sums, left, acc[r][0]);
      _mm512_mask_storeu_ps(sums + 16, right, acc[r][1]);
    }
    return;
  }
  // C = alpha * sum + beta * C, as scaled_sum() (the build does not fuse
  // a product and a sum into one rounding: -ffp-contract=off).
  const __m512 alpha = _mm512_set1_ps(out.alpha), beta = _mm512_set1_ps(out.beta);
  const auto scaled = [&](__m512 sum, __mmask16 mask, float* c) {
    const __m512 v = out.alpha == 1.0f ? sum : _mm512_mul_ps(alpha, sum);
    if (out.beta == 0.0f) return v;
    const __m512 old = _mm512_maskz_loadu_ps(mask, c);
    return _mm512_add_ps(v, out.beta == 1.0f ? old : _mm512_mul_ps(beta, old));
  };
  for (int r = 0; r < rows; ++r) {
    float* c = out.c + static_cast<size_t>(r) * out.ldc;
    _mm512_mask_storeu_ps(c, left, scaled(acc[r][0], left, c));
    _mm512_mask_storeu_ps(c + 16, right, scaled(acc[r][1], right, c + 16));
  }
}

}  // namespace zerodp::kernels::bf16_gemm
