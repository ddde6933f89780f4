// SPDX-License-Identifier: Apache-2.0
// The bf16 product's test cases that both its own tests (gemm_bf16_test.cc)
// and the bf16 weight operand's (bf16_weights_test.cc) run: small blockings
// that cross every edge of the driver's blocking at small sizes, with the
// shapes that cross them, every transpose and alpha/beta.
#pragma once

#include <utility>

#include "kernels/gemm.h"
#include "kernels/gemm_bf16_kernels.h"

namespace zerodp::kernels::gemm_bf16_cases {

struct Shape {
  int m, n, k;
};

inline constexpr std::pair<float, float> kAlphaBeta[] = {{1.0f, 0.0f}, {-1.5f, 0.0f}, {1.0f, 1.0f}, {0.5f, -0.75f}};

// Blocks of 16 pairs, 64 columns and 24 rows, sums carried for 24 rows at a
// time (beta != 0): 53 rows make 3 blocks and 3 bands, the last of 5 rows
// (not a whole tile); 150 columns 3 blocks, the last tile 22 wide; k = 101
// 4 blocks of k, the last 3 pairs with no odd element at its end. Then a
// carry smaller than one row of tiles (bands of 12 rows), blocks of k no
// multiple of 16 pairs (rounded up), and k = 0 (C = beta * C). Calls
// check(trans_a, trans_b, shape, alpha, beta, blocking) for each case.
template <typename Check>
void for_each_block_edge(Check check) {
  const bf16_gemm::Blocking small{16, 64, 24, 24 * 64};
  const bf16_gemm::Blocking odd{10, 32, 12, 100};
  for (const auto& [blocking, s] : {std::pair{small, Shape{53, 150, 101}}, std::pair{small, Shape{12, 64, 32}},
                                    std::pair{odd, Shape{29, 70, 67}}, std::pair{small, Shape{30, 40, 0}}}) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const auto& [alpha, beta] : kAlphaBeta) check(ta, tb, s, alpha, beta, blocking);
      }
    }
  }
}

}  // namespace zerodp::kernels::gemm_bf16_cases
