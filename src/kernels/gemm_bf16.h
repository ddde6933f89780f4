// SPDX-License-Identifier: Apache-2.0
// The bf16 matrix product: C = alpha * bf16(op(A)) @ bf16(op(B)) + beta * C,
// row-major, fp32 in and out, the operands rounded to bf16 (nearest even)
// and their products summed in fp32: autocast's bf16 product, at the rate of
// the CPU's bf16 units where it has them.
//
// The sum is defined bit for bit, whatever the CPU: for each C[i][j], from
// +0, over k in pairs (p = 0, 1, ...; a missing k+1 of an odd k counts 0),
//   acc = bf16_dot_step(acc, A[i][2p+1], B[2p+1][j])
//   acc = bf16_dot_step(acc, A[i][2p],   B[2p][j])
// where bf16_dot_step (gemm_bf16_kernels.h) is one lane of AVX512_BF16's
// vdpbf16ps: the product exact, one rounding to nearest even, a result
// below fp32's normal range after rounding flushed to a signed zero, and
// operands below bf16's normal range read as zero. Then C[i][j] =
// alpha * acc + beta * C[i][j] (each product rounded, alpha = 1 and beta = 0
// skipped; beta = 0 reads no C). The avx512bf16 SIMD level runs vdpbf16ps;
// every other level runs the same steps in portable C++ (bitwise the same,
// at a fraction of the rate), which tests/kernels/gemm_bf16_test.cc holds
// against the hardware where the CPU has it.
//
// Memory: each calling thread keeps its own packing buffers (the bf16
// operands in the kernel's order), grown to the largest blocks it packed
// and then kept, as OpenBLAS keeps its pool: the warm-up runs every product
// shape before the baseline is measured (docs/memory.md). The blocking
// bounds them whatever the shape: at most 6.4 MiB per thread (B's block of
// 1024 columns x 1024 of k, A's block of 192 rows x 1024 of k, and 4 MiB of
// running sums carried between blocks of k when beta != 0; gemm_bf16.cc).
// Thread-safety: any number of threads may call it at once.
#pragma once
#include <span>

#include "core/dtype.h"
#include "core/simd.h"
#include "kernels/gemm.h"

namespace zerodp::kernels {

void gemm_bf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc, SimdLevel level = active_simd_level());
// The same product with B's elements bf16 values read in place: bit for bit
// the product above on their fp32 widening (which is exact), so weights kept
// in bf16 need no fp32 copy. The operand rule reads the widened value: a
// bf16 subnormal is the zero of its sign, a signaling NaN is quieted.
void gemm_bf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
               const BFloat16* b, int ldb, float beta, float* c, int ldc, SimdLevel level = active_simd_level());

// Whether `level` runs the bf16 products on the CPU's bf16 units (else in
// portable C++, bitwise the same).
bool bf16_units_at(SimdLevel level);

// The bf16 operands gemm_bf16 makes of `in` (nearest even, a NaN quieted,
// an fp32 subnormal the zero of its sign), into `out` (the same size;
// ShapeError otherwise). Widened back to fp32 (exactly), they are values the
// product reads unchanged: a tensor that only matrix products read can be
// kept this way at half its bytes with no bit of any result changed.
void round_to_bf16_operands(std::span<const float> in, std::span<BFloat16> out);

}  // namespace zerodp::kernels
