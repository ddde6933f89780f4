// SPDX-License-Identifier: Apache-2.0
// The bf16 product's portable level code (gemm_bf16_kernels.h): packing and
// the tile in plain C++, the steps bit for bit those of vdpbf16ps.
#include <algorithm>
#include <bit>

#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels::bf16_gemm {

void pack_scalar(const PackSource& x, int row0, int rows, int k, int width, uint32_t* out) {
  const int pairs = (k + 1) / 2;
  for (int panel = 0; panel < rows; panel += width) {
    for (int p = 0; p < pairs; ++p) {
      const int kk = 2 * p;
      for (int r = 0; r < width; ++r) {
        const int row = panel + r;
        uint32_t word = 0;
        if (row < rows) {
          const uint32_t even = operand_bits(x.at(row0 + row, kk));
          const uint32_t odd = kk + 1 < k ? operand_bits(x.at(row0 + row, kk + 1)) : 0u;
          word = even | (odd << 16);
        }
        *out++ = word;
      }
    }
  }
}

void tile_scalar(int pairs, const uint32_t* a, const uint32_t* b, float* tile, bool accumulate) {
  if (!accumulate) std::fill(tile, tile + kTileSize, 0.0f);
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
}

}  // namespace zerodp::kernels::bf16_gemm
