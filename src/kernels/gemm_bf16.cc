// SPDX-License-Identifier: Apache-2.0
// The bf16 product's driver (gemm_bf16.h), blocked as GotoBLAS blocks: for
// each block of B's columns and each block of k, B's block packed once;
// then for each block of A's rows A's block packed once, and each tile of
// 12 rows of it swept across the whole of B's block (the tile's slice of A
// stays in L1, B's block streams from L2 and L3). The tiles' running sums
// are carried from one block of k to the next exactly in fp32 (the order of
// each C element's k does not change, so neither do its bits): in C itself
// when beta = 0 (C holds nothing to keep until the last block writes
// alpha * sum), else in a buffer of `carry` floats, over as many of A's
// rows at a time as it holds (B's block packed again for each such band).
#include "kernels/gemm_bf16.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels {
namespace {

using bf16_gemm::kTileCols;
using bf16_gemm::kTileRows;

// 512 pairs of k: every k up to 1024 (the model's forward and weight
// gradient products at B x T <= 1024) in one block, so no sums are carried.
// A's tile slice is 24 KiB and B's block 2 MiB. Over gpt2-124m's products
// (B x T = 1024, one thread of a Zen 5), blocks of 256 and 384 pairs ran
// 10% and 5% slower, 512 columns 5% slower; 2048 columns and 96-288 rows
// made no difference past the noise.
// Buffers, at most: B 1024 x 512 words (2 MiB), A 192 x 512 (384 KiB), the
// carried sums 2^20 floats (4 MiB): 6.4 MiB per thread, whatever the shape.
constexpr bf16_gemm::Blocking kBlocking{512, 1024, 192, size_t{1} << 20};
static_assert(kBlocking.pairs % 16 == 0 && kBlocking.cols % kTileCols == 0 && kBlocking.rows % kTileRows == 0,
              "whole chunks and tiles per block");

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }
int ceil_div(int value, int divisor) { return (value + divisor - 1) / divisor; }

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

// Each calling thread's packing buffers, grown to its largest product's
// blocks (bounded by the blocking, not by the product).
struct Buffers {
  std::vector<uint32_t> a, b;
  std::vector<float> carry;
};

void grow(auto& v, size_t size) {
  if (v.size() < size) v.resize(size);
}

}  // namespace

bool bf16_units_at(SimdLevel level) { return level == SimdLevel::kAvx512Bf16; }

void round_to_bf16_operands(std::span<const float> in, std::span<BFloat16> out) {
  ZDP_CHECK(in.size() == out.size(), ShapeError, "[gemm_bf16] {} values rounded into {} bf16 operands", in.size(),
            out.size());
  for (size_t i = 0; i < in.size(); ++i) out[i].bits = bf16_gemm::operand_bits(in[i]);
}

void gemm_bf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc, SimdLevel level) {
  bf16_gemm::gemm_blocked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, level, kBlocking);
}

void gemm_bf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
               const BFloat16* b, int ldb, float beta, float* c, int ldc, SimdLevel level) {
  bf16_gemm::gemm_blocked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, level, kBlocking);
}

namespace bf16_gemm {
namespace {

// The product over A's rows and B's columns (as rows of op(B)^T), whatever
// type either is stored in: only the packing reads them.
void gemm_packed(int m, int n, int k, float alpha, const PackSource& rows_of_a, const PackSource& cols_of_b, float beta,
                 float* c, int ldc, SimdLevel level, const Blocking& blocking) {
  ZDP_CHECK(m >= 0 && n >= 0 && k >= 0, ShapeError, "[gemm_bf16] negative size m={} n={} k={}", m, n, k);
  if (m == 0 || n == 0) return;
  const LevelCode code = code_for(level);
  // Blocks of k of even size (a multiple of 16 pairs), as few as the
  // blocking allows; k = 0 is one empty block (C = alpha * 0 + beta * C).
  const int pairs = (k + 1) / 2;
  const int block_pairs = pairs == 0 ? 0 : round_up(ceil_div(pairs, ceil_div(pairs, blocking.pairs)), 16);
  const int k_blocks = pairs == 0 ? 1 : ceil_div(pairs, block_pairs);
  const int block_cols = std::min(round_up(n, kTileCols), blocking.cols);
  const int block_rows = std::min(round_up(m, kTileRows), blocking.rows);
  const bool carry_in_buffer = k_blocks > 1 && beta != 0.0f;
  // Rows of A whose sums one pass over k carries (a band).
  const int band_rows =
      carry_in_buffer ? std::max(kTileRows, static_cast<int>(blocking.carry / block_cols) / kTileRows * kTileRows) : m;
  thread_local Buffers buffers;
  grow(buffers.b, static_cast<size_t>(block_cols) * block_pairs);
  grow(buffers.a, static_cast<size_t>(block_rows) * block_pairs);
  if (carry_in_buffer)
    grow(buffers.carry, static_cast<size_t>(std::min(band_rows, round_up(m, kTileRows))) * block_cols);
  for (int col0 = 0; col0 < n; col0 += blocking.cols) {
    const int cols = std::min(blocking.cols, n - col0);
    const int col_tiles = ceil_div(cols, kTileCols);
    for (int band0 = 0; band0 < m; band0 += band_rows) {
      const int band_end = std::min(m, band0 + band_rows);
      for (int kb = 0; kb < k_blocks; ++kb) {
        const int k0 = 2 * kb * block_pairs;
        const int k1 = std::min(k, k0 + 2 * block_pairs);
        const int block = (k1 - k0 + 1) / 2;  // pairs in this block
        code.pack(cols_of_b, col0, cols, k0, k1, kTileCols, buffers.b.data());
        for (int row0 = band0; row0 < band_end; row0 += blocking.rows) {
          const int rows = std::min(blocking.rows, band_end - row0);
          code.pack(rows_of_a, row0, rows, k0, k1, kTileRows, buffers.a.data());
          for (int tr = 0; tr < ceil_div(rows, kTileRows); ++tr) {
            const int r0 = row0 + tr * kTileRows;
            const uint32_t* a_panel = buffers.a.data() + static_cast<size_t>(tr) * block * kTileRows;
            for (int tc = 0; tc < col_tiles; ++tc) {
              const int c0 = col0 + tc * kTileCols;
              float* c_tile = c + static_cast<size_t>(r0) * ldc + c0;
              // Sums carried in C itself unless a buffer carries them
              // (with one block of k, they are neither read nor kept).
              TileOut out{.sums = c_tile,
                          .ld = ldc,
                          .c = c_tile,
                          .ldc = ldc,
                          .rows = std::min(kTileRows, m - r0),
                          .cols = std::min(kTileCols, n - c0),
                          .accumulate = kb > 0,
                          .last = kb == k_blocks - 1,
                          .alpha = alpha,
                          .beta = beta};
              if (carry_in_buffer) {
                out.sums = buffers.carry.data() + static_cast<size_t>(r0 - band0) * block_cols + c0 - col0;
                out.ld = block_cols;
              }
              code.tile(block, a_panel, buffers.b.data() + static_cast<size_t>(tc) * block * kTileCols, out);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void gemm_blocked(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc, SimdLevel level, const Blocking& blocking) {
  gemm_packed(m, n, k, alpha, PackSource{a, lda, trans_a == Trans::kYes}, PackSource{b, ldb, trans_b == Trans::kNo},
              beta, c, ldc, level, blocking);
}

void gemm_blocked(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const BFloat16* b, int ldb, float beta, float* c, int ldc, SimdLevel level,
                  const Blocking& blocking) {
  const PackSource cols_of_b{nullptr, ldb, trans_b == Trans::kNo, b};
  gemm_packed(m, n, k, alpha, PackSource{a, lda, trans_a == Trans::kYes}, cols_of_b, beta, c, ldc, level, blocking);
}

}  // namespace bf16_gemm
}  // namespace zerodp::kernels
