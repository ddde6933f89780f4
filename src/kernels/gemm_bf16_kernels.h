// SPDX-License-Identifier: Apache-2.0
// The bf16 product's level code (gemm_bf16.h): packing fp32 (or bf16)
// operands into bf16 pairs, and one kTileRows x kTileCols tile of sums over
// packed operands; once per SIMD level that has its own, and the step they
// all compute. Internal to kernels/.
//
// Packed operands hold bf16 pairs as 32-bit words, k's even element in the
// low half and its odd one in the high half (vdpbf16ps's order), in panels
// of `width` rows: panel t holds, for each pair p, `width` words (rows
// 0..width-1 of the panel). A is packed by its rows (width kTileRows) and B
// by its columns, as rows of op(B)^T (width kTileCols), a block of k at a
// time.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/simd.h"
#include "kernels/gemm.h"

namespace zerodp::kernels::bf16_gemm {

inline constexpr int kTileRows = 12;
inline constexpr int kTileCols = 32;
inline constexpr size_t kTileSize = size_t{kTileRows} * kTileCols;  // floats of a tile

// A matrix read as [rows, k]: element (row, kk) is data[row * ld + kk], or
// data[kk * ld + row] when `by_columns` (stored the other way round). The
// elements are fp32 values at `data`, or bf16 values at `bf16` where that
// is set, read as their fp32 widening: the operands are then exactly those
// of an fp32 copy of them (operand_bits() of the widened value: a bf16
// subnormal the zero of its sign, a NaN quieted).
struct PackSource {
  const float* data;
  int ld;
  bool by_columns;
  const BFloat16* bf16 = nullptr;
  size_t offset(int row, int kk) const {
    return by_columns ? static_cast<size_t>(kk) * ld + row : static_cast<size_t>(row) * ld + kk;
  }
  float at(int row, int kk) const {
    if (bf16 != nullptr) return std::bit_cast<float>(static_cast<uint32_t>(bf16[offset(row, kk)].bits) << 16);
    return data[offset(row, kk)];
  }
};

// Rows [row0, row0 + rows) of `x` over k in [k0, k1) (k0 even) as panels of
// `width` (kTileRows or kTileCols) rows: ceil(rows / width) panels of
// (k1 - k0 + 1) / 2 pairs, zero past the last row and past k1.
using PackFn = void (*)(const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out);

// Where one tile's sums come from and go. The tile's rows x cols part lies
// in C (the rest is padding, its sums dropped). The running sums start from
// +0, or from sums[r * ld + c] when `accumulate` (a later block of k: the
// sum goes on in the same order, exactly); then they are stored back there,
// or, when `last`, written to C: c[r * ldc + c] = alpha * sum + beta * c
// (gemm_bf16.h: alpha = 1 and beta = 1 not multiplied, beta = 0 reads no C).
// `sums` may be C itself (beta = 0: C holds nothing to keep).
struct TileOut {
  float* sums;
  int ld;
  float* c;
  int ldc;
  int rows, cols;
  bool accumulate, last;
  float alpha, beta;
};

// Sums `pairs` pairs of an A panel and a B panel into the tile `out` names.
using TileFn = void (*)(int pairs, const uint32_t* a, const uint32_t* b, const TileOut& out);

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

// C's value from a finished sum (gemm_bf16.h): alpha * sum + beta * c, each
// product rounded, alpha = 1 and beta = 1 not multiplied, beta = 0 reading
// no C. The levels' vector code computes the same three roundings.
inline float scaled_sum(float sum, float alpha, float beta, const float* c) {
  const float scaled = alpha == 1.0f ? sum : alpha * sum;
  if (beta == 0.0f) return scaled;
  return scaled + (beta == 1.0f ? *c : beta * *c);
}

// The driver's blocking (gemm_bf16.cc): how much of each operand is packed
// at a time, and how many running sums are kept between blocks of k where C
// cannot hold them (beta != 0).
struct Blocking {
  int pairs;     // pairs of k per block at most, a multiple of 16 (else rounded up)
  int cols;      // columns of B per block, a multiple of kTileCols
  int rows;      // rows of A per block, a multiple of kTileRows
  size_t carry;  // floats of running sums (at least kTileRows x cols)
};

// gemm_bf16() with the given blocking (the tests take small blocks to cross
// every edge of the blocking at small sizes): the same bits whatever it is.
void gemm_blocked(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc, SimdLevel level, const Blocking& blocking);
void gemm_blocked(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const BFloat16* b, int ldb, float beta, float* c, int ldc, SimdLevel level, const Blocking& blocking);

// The portable code (every level without bf16 units).
void pack_scalar(const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out);
void tile_scalar(int pairs, const uint32_t* a, const uint32_t* b, const TileOut& out);
#if ZERODP_SIMD_X86_64
void pack_avx512bf16(const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out);
void tile_avx512bf16(int pairs, const uint32_t* a, const uint32_t* b, const TileOut& out);
#endif

}  // namespace zerodp::kernels::bf16_gemm
