// SPDX-License-Identifier: Apache-2.0
// The bf16 product's portable level code (gemm_bf16_kernels.h): packing and
// the tile in plain C++, the steps bit for bit those of vdpbf16ps.
#include <algorithm>
#include <bit>

#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels::bf16_gemm {

void pack_scalar(const PackSource& x, int row0, int rows, int k0, int k1, int width, uint32_t* out) {
  for (int panel = 0; panel < rows; panel += width) {
    for (int kk = k0; kk < k1; kk += 2) {
      for (int r = 0; r < width; ++r) {
        const int row = panel + r;
        uint32_t word = 0;
        if (row < rows) {
          const uint32_t even = operand_bits(x.at(row0 + row, kk));
          const uint32_t odd = kk + 1 < k1 ? operand_bits(x.at(row0 + row, kk + 1)) : 0u;
          word = even | (odd << 16);
        }
        *out++ = word;
      }
    }
  }
}

void tile_scalar(int pairs, const uint32_t* a, const uint32_t* b, const TileOut& out) {
  float tile[kTileSize];
  std::fill(tile, tile + kTileSize, 0.0f);
  const int rows = std::min(out.rows, kTileRows);
  const int cols = std::min(out.cols, kTileCols);
  if (out.accumulate) {
    for (int r = 0; r < rows; ++r)
      std::copy_n(out.sums + static_cast<size_t>(r) * out.ld, cols, tile + static_cast<size_t>(r) * kTileCols);
  }
  const auto low = [](uint32_t word) { return std::bit_cast<float>(word << 16); };
  const auto high = [](uint32_t word) { return std::bit_cast<float>(word & 0xFFFF0000u); };
  for (int p = 0; p < pairs; ++p, a += kTileRows, b += kTileCols) {
    for (int r = 0; r < kTileRows; ++r) {
      float* row = tile + static_cast<size_t>(r) * kTileCols;
      for (int c = 0; c < kTileCols; ++c) {
        row[c] = bf16_dot_step(bf16_dot_step(row[c], high(a[r]), high(b[c])), low(a[r]), low(b[c]));
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    const float* sum = tile + static_cast<size_t>(r) * kTileCols;
    if (out.last) {
      float* c = out.c + static_cast<size_t>(r) * out.ldc;
      for (int j = 0; j < cols; ++j) c[j] = scaled_sum(sum[j], out.alpha, out.beta, c + j);
    } else {
      std::copy_n(sum, cols, out.sums + static_cast<size_t>(r) * out.ld);
    }
  }
}

}  // namespace zerodp::kernels::bf16_gemm
