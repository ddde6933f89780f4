// SPDX-License-Identifier: Apache-2.0
// The bf16 product's level code (gemm_bf16.h): packing fp32 operands into
// bf16 pairs, and one kTileRows x kTileCols tile of sums over packed
// operands; once per SIMD level that has its own, and the step they all
// compute. Internal to kernels/.
//
// Packed operands hold bf16 pairs as 32-bit words, k's even element in the
// low half and its odd one in the high half (vdpbf16ps's order), in panels
// of `width` rows: panel t holds, for each pair p, `width` words (rows
// 0..width-1 of the panel). A is packed by its rows (width kTileRows) and B
// by its columns, as rows of op(B)^T (width kTileCols).
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace zerodp::kernels::bf16_gemm {

inline constexpr int kTileRows = 12;
inline constexpr int kTileCols = 32;
inline constexpr size_t kTileSize = size_t{kTileRows} * kTileCols;  // floats of a tile

// A matrix read as [rows, k]: element (row, kk) is data[row * ld + kk], or
// data[kk * ld + row] when `by_columns` (stored the other way round).
struct PackSource {
  const float* data;
  int ld;
  bool by_columns;
  float at(int row, int kk) const {
    return by_columns ? data[static_cast<size_t>(kk) * ld + row] : data[static_cast<size_t>(row) * ld + kk];
  }
};

// Rows [row0, row0 + rows) of `x` over k as panels of `width` (at most 16, or 32)
// rows: ceil(rows / width) panels of (k + 1) / 2 pairs, zero past the last
// row and the last k.
using PackFn = void (*)(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out);

// Sums `pairs` pairs of an A panel and a B panel into tile[r * kTileCols +
// c]: from +0, or from the tile's values when `accumulate` (a later block
// of k: the sum goes on in the same order, exactly).
using TileFn = void (*)(int pairs, const uint32_t* a, const uint32_t* b, float* tile, bool accumulate);

// The bf16 operand of an fp32 value, as AVX512_BF16's conversion makes it:
// nearest even, a NaN quieted, and an fp32 subnormal the zero of its sign
// (so no bf16 operand is subnormal).
inline uint16_t operand_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7F800000u) == 0) return static_cast<uint16_t>((x >> 16) & 0x8000u);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// One lane of vdpbf16ps's accumulation: acc + x * y for bf16 values x and y
// (as floats; neither subnormal), the product exact, rounded once to
// nearest even; a result whose rounding to 24 bits (exponent unbounded)
// lies below 2^-126 becomes a zero of its sign (x86's flush-to-zero, tiny
// after rounding). In double the sum is exact wherever the result is near
// that range, and elsewhere its double rounding to float is innocuous
// (operands of at most 24 significant bits, 53 >= 2 * 24 + 2).
inline float bf16_dot_step(float acc, float x, float y) {
  const double sum = static_cast<double>(acc) + static_cast<double>(x) * static_cast<double>(y);
  if (std::fabs(sum) >= 0x1p-126) return static_cast<float>(sum);
  // 2^64 moves a tiny sum into float's normal range: rounding there is
  // rounding to 24 bits with the exponent unbounded (NaN passes through).
  const double rounded = static_cast<double>(static_cast<float>(sum * 0x1p64)) * 0x1p-64;
  if (std::fabs(rounded) < 0x1p-126) return std::copysign(0.0f, static_cast<float>(sum));
  return static_cast<float>(rounded);
}

// The portable code (every level without bf16 units).
void pack_scalar(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out);
void tile_scalar(int pairs, const uint32_t* a, const uint32_t* b, float* tile, bool accumulate);
#if ZERODP_SIMD_X86_64
void pack_avx512bf16(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out);
void tile_avx512bf16(int pairs, const uint32_t* a, const uint32_t* b, float* tile, bool accumulate);
#endif

}  // namespace zerodp::kernels::bf16_gemm
