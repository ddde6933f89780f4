// Internal: the per-instruction-set conversion loops behind convert.h.
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

}  // namespace zerodp::convert_kernels
