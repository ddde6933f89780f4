// SPDX-License-Identifier: Apache-2.0
// Bulk conversions between fp32 and fp16/bf16, vectorised.
//
// The instruction set is the SIMD level (core/simd.h): AVX-512, AVX2 + F16C,
// or the portable C++ loops, chosen at run time. Every level gives the same
// bits as the scalar reference in dtype.h, for every input including
// subnormals, infinities and NaNs; tests hold each path against it.
// (AVX512_BF16's VCVTNEPS2BF16 is deliberately not used: it flushes subnormal
// inputs and outputs to zero, so it would not match the reference.)
// Thread-safety: pure functions over caller-owned memory; src and dst must not
// overlap.
#pragma once

#include <cstddef>
#include <span>

#include "core/dtype.h"
#include "core/simd.h"

namespace zerodp {

// dst[i] = convert(src[i]); the spans must have the same size.
void convert(std::span<const float> src, std::span<Half> dst, SimdLevel level = active_simd_level());
void convert(std::span<const Half> src, std::span<float> dst, SimdLevel level = active_simd_level());
void convert(std::span<const float> src, std::span<BFloat16> dst, SimdLevel level = active_simd_level());
void convert(std::span<const BFloat16> src, std::span<float> dst, SimdLevel level = active_simd_level());

// Type-erased form for code that holds a Dtype: converts count elements of
// src_type at src into dst_type at dst (fp32 <-> fp16/bf16, or a copy when the
// types are equal). fp16 <-> bf16 goes through fp32 and rounds once.
void convert(const void* src, Dtype src_type, void* dst, Dtype dst_type, size_t count);

}  // namespace zerodp
