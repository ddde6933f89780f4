// SPDX-License-Identifier: Apache-2.0
// Internal: the per-SIMD-level conversion loops behind convert.h (x86-64
// builds have the avx2 and avx512 ones, aarch64 builds the neon ones).
// Each function handles any count (vector body plus scalar tail).
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace zerodp::convert_kernels {

void float_to_half_avx2(const float* src, Half* dst, size_t n);
void half_to_float_avx2(const Half* src, float* dst, size_t n);
void float_to_bf16_avx2(const float* src, BFloat16* dst, size_t n);
void bf16_to_float_avx2(const BFloat16* src, float* dst, size_t n);

void float_to_half_avx512(const float* src, Half* dst, size_t n);
void half_to_float_avx512(const Half* src, float* dst, size_t n);
void float_to_bf16_avx512(const float* src, BFloat16* dst, size_t n);
void bf16_to_float_avx512(const BFloat16* src, float* dst, size_t n);

// aarch64 builds only: fp16 (bf16 uses the portable loops there).
void float_to_half_neon(const float* src, Half* dst, size_t n);
void half_to_float_neon(const Half* src, float* dst, size_t n);

}  // namespace zerodp::convert_kernels
