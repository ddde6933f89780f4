// Bulk conversions between fp32 and fp16/bf16, vectorised.
//
// The instruction set is chosen once at run time from the CPU's features
// (AVX-512F, else AVX2+F16C, else portable C++). Every path gives the same
// bits as the scalar reference in dtype.h, for every input including
// subnormals, infinities and NaNs; tests hold each path against it.
// (AVX512_BF16's VCVTNEPS2BF16 is deliberately not used: it flushes subnormal
// inputs and outputs to zero, so it would not match the reference.)
// Thread-safety: pure functions over caller-owned memory; src and dst must not
// overlap.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace zerodp {

enum class SimdLevel { kPortable = 0, kAvx2F16c = 1, kAvx512 = 2 };

// The best level this CPU supports (detected once).
SimdLevel best_simd_level();
// Every level this CPU can run, portable first: for tests and benchmarks.
std::vector<SimdLevel> supported_simd_levels();
const char* simd_level_name(SimdLevel level);

// dst[i] = convert(src[i]); the spans must have the same size.
void convert(std::span<const float> src, std::span<Half> dst, SimdLevel level = best_simd_level());
void convert(std::span<const Half> src, std::span<float> dst, SimdLevel level = best_simd_level());
void convert(std::span<const float> src, std::span<BFloat16> dst, SimdLevel level = best_simd_level());
void convert(std::span<const BFloat16> src, std::span<float> dst, SimdLevel level = best_simd_level());

// Type-erased form for code that holds a Dtype: converts count elements of
// src_type at src into dst_type at dst (fp32 <-> fp16/bf16, or a copy when the
// types are equal). fp16 <-> bf16 goes through fp32 and rounds once.
void convert(const void* src, Dtype src_type, void* dst, Dtype dst_type, size_t count);

}  // namespace zerodp
