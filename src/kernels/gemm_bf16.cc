// SPDX-License-Identifier: Apache-2.0
// The bf16 product's driver (gemm_bf16.h), blocked as GotoBLAS blocks:
// a block of B's columns packed over all of k, a block of A's rows packed,
// then k in blocks whose packed slices stay in cache, each tile's sums
// carried from block to block in fp32 (exactly: the order of each C
// element's k does not change, so neither do its bits).
#include "kernels/gemm_bf16.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels {
namespace {

using bf16_gemm::kTileCols;
using bf16_gemm::kTileRows;

constexpr int kBlockCols = 256;   // columns of B packed at a time (k x 256 bf16)
constexpr int kBlockRows = 96;    // rows of A packed at a time (a multiple of kTileRows)
constexpr int kBlockPairs = 128;  // pairs of k per pass over a block's tiles: 16 KiB of a B panel
using bf16_gemm::kTileSize;
static_assert(kBlockRows % kTileRows == 0 && kBlockCols % kTileCols == 0, "whole tiles per block");

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

struct LevelCode {
  bf16_gemm::PackFn pack;
  bf16_gemm::TileFn tile;
};

LevelCode code_for(SimdLevel level) {
  return by_level<LevelCode>(level, {
    {SimdLevel::kScalar, {bf16_gemm::pack_scalar, bf16_gemm::tile_scalar}},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx512Bf16, {bf16_gemm::pack_avx512bf16, bf16_gemm::tile_avx512bf16}},
#endif
  });
}

// C's part of one tile of sums: alpha * sum + beta * C.
void write_tile(const float* tile, int rows, int cols, float alpha, float beta, float* c, int ldc) {
  for (int r = 0; r < rows; ++r) {
    float* out = c + static_cast<size_t>(r) * ldc;
    const float* sum = tile + static_cast<size_t>(r) * kTileCols;
    for (int j = 0; j < cols; ++j) {
      const float scaled = alpha == 1.0f ? sum[j] : alpha * sum[j];
      if (beta == 0.0f) {
        out[j] = scaled;
      } else {
        out[j] = scaled + (beta == 1.0f ? out[j] : beta * out[j]);
      }
    }
  }
}

// Each calling thread's packing buffers, grown to its largest product.
struct Buffers {
  std::vector<uint32_t> a, b;
  std::vector<float> sums;
};

}  // namespace

bool bf16_units_at(SimdLevel level) { return level == SimdLevel::kAvx512Bf16; }

void gemm_bf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc, SimdLevel level) {
  ZDP_CHECK(m >= 0 && n >= 0 && k >= 0, ShapeError, "[gemm_bf16] negative size m={} n={} k={}", m, n, k);
  if (m == 0 || n == 0) return;
  // A by its rows; B by its columns, as rows of op(B)^T.
  const bf16_gemm::PackSource rows_of_a{a, lda, trans_a == Trans::kYes};
  const bf16_gemm::PackSource cols_of_b{b, ldb, trans_b == Trans::kNo};
  const int pairs = (k + 1) / 2;
  const LevelCode code = code_for(level);
  thread_local Buffers buffers;
  const auto grow = [](auto& v, size_t size) {
    if (v.size() < size) v.resize(size);
  };
  grow(buffers.b, static_cast<size_t>(std::min(round_up(n, kTileCols), kBlockCols)) * pairs);
  grow(buffers.a, static_cast<size_t>(std::min(round_up(m, kTileRows), kBlockRows)) * pairs);
  grow(buffers.sums, static_cast<size_t>(kBlockRows) * kBlockCols);
  for (int col0 = 0; col0 < n; col0 += kBlockCols) {
    const int cols = std::min(kBlockCols, n - col0);
    const int col_tiles = (cols + kTileCols - 1) / kTileCols;
    code.pack(cols_of_b, col0, cols, k, kTileCols, buffers.b.data());
    for (int row0 = 0; row0 < m; row0 += kBlockRows) {
      const int rows = std::min(kBlockRows, m - row0);
      const int row_tiles = (rows + kTileRows - 1) / kTileRows;
      code.pack(rows_of_a, row0, rows, k, kTileRows, buffers.a.data());
      float* sums = buffers.sums.data();
      if (pairs == 0) std::fill(sums, sums + static_cast<size_t>(row_tiles) * col_tiles * kTileSize, 0.0f);
      for (int p0 = 0; p0 < pairs; p0 += kBlockPairs) {
        const int block = std::min(kBlockPairs, pairs - p0);
        for (int tc = 0; tc < col_tiles; ++tc) {
          const uint32_t* b_panel = buffers.b.data() + (static_cast<size_t>(tc) * pairs + p0) * kTileCols;
          for (int tr = 0; tr < row_tiles; ++tr) {
            const uint32_t* a_panel = buffers.a.data() + (static_cast<size_t>(tr) * pairs + p0) * kTileRows;
            code.tile(block, a_panel, b_panel, sums + (static_cast<size_t>(tc) * row_tiles + tr) * kTileSize, p0 > 0);
          }
        }
      }
      for (int tc = 0; tc < col_tiles; ++tc) {
        for (int tr = 0; tr < row_tiles; ++tr) {
          write_tile(
              sums + (static_cast<size_t>(tc) * row_tiles + tr) * kTileSize, std::min(kTileRows, rows - tr * kTileRows),
              std::min(kTileCols, cols - tc * kTileCols), alpha, beta,
              c + static_cast<size_t>(row0 + tr * kTileRows) * ldc + col0 + static_cast<size_t>(tc) * kTileCols, ldc);
        }
      }
    }
  }
}

}  // namespace zerodp::kernels
