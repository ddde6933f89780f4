// SPDX-License-Identifier: Apache-2.0
// Vectorisable fp32 math for the kernels: exp and tanh written as straight-
// line arithmetic the compiler turns into SIMD code (libm's expf/tanhf are
// calls the vectoriser cannot see through without -ffast-math), plus lane-
// parallel sums. Internal to src/kernels; pure functions, thread-safe.
// The hottest loops built on these are compiled once per SIMD level
// (model_loops.h).
//
// Accuracy: fast_exp is within 2 ulp of expf for x in [-87, 88] (degree-6
// polynomial on |r| <= ln2/2 after range reduction) and 0 / +huge outside;
// fast_tanh is within ~1e-7 absolute. Summation order is fixed (16 lanes,
// then a fixed tree), so results are deterministic for a given length, and
// the same for every build target: the compiler may vectorise these loops
// with whatever vector unit the target has (SSE2, AVX2, AVX-512, NEON), but
// without -ffast-math it never reorders or fuses them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace zerodp::kernels::detail {
// Internal linkage on purpose: each SIMD level's file (model_kernels_*.cc)
// compiles its own copy with its own flags, and the linker must never hand
// one level's copy to another.
namespace {  // NOLINT(cert-dcl59-cpp)

inline constexpr int kLanes = 16;

// a * b + c with two roundings, on every target: a fused multiply-add
// exists only on some CPUs (and some SIMD levels), and the kernels must give
// the same bits on all of them, whatever -march the build used (the build
// also forbids implicit contraction: -ffp-contract=off).
inline float mul_add(float a, float b, float c) { return a * b + c; }

// c ? a : b on the bits, without a branch: GCC 12 vectorises a conditional
// only where the level has masked instructions (AVX-512), so fast_exp's
// clamps kept GELU and the softmax scalar at AVX2 and SSE2. The same result
// as the conditional for every input, NaN included.
inline float select(bool c, float a, float b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & mask) | (std::bit_cast<uint32_t>(b) & ~mask));
}

// e^x. Range reduction x = n ln2 + r, e^r by its Taylor polynomial (Horner),
// 2^n built in the exponent bits. The rounding to n uses the 1.5*2^23 trick
// so that it is plain float arithmetic.
inline float fast_exp(float x) {
  x = select(x < -87.0f, -87.0f, x);
  x = select(x > 88.0f, 88.0f, x);
  const float kRound = 12582912.0f;  // 1.5 * 2^23
  const float shifted = x * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  const float r = mul_add(-n, 1.42860682030941723212e-6f, mul_add(-n, 0.693145751953125f, x));
  float p = 1.0f / 720.0f;
  p = mul_add(p, r, 1.0f / 120.0f);
  p = mul_add(p, r, 1.0f / 24.0f);
  p = mul_add(p, r, 1.0f / 6.0f);
  p = mul_add(p, r, 0.5f);
  p = mul_add(p, r, 1.0f);
  p = mul_add(p, r, 1.0f);
  // n as an integer from the bits of `shifted`, whose mantissa holds 2^22 + n:
  // the same value as static_cast<int32_t>(n) for every finite x, but defined
  // for NaN too (converting a NaN float to int is undefined behaviour).
  const int32_t e = (std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound)) + 127;
  return p * std::bit_cast<float>(static_cast<uint32_t>(e) << 23);
}

// tanh(x) = 1 - 2 / (e^{2x} + 1); saturates cleanly at +-1.
inline float fast_tanh(float x) { return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f); }

// sum of x[0..n) with 16 lane accumulators, then a fixed reduction.
inline float lane_sum(const float* x, size_t n) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  }
  for (size_t j = 0; i < n; ++i, ++j) acc[j] += x[i];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
  return acc[0];
}

// sum of x[i] * y[i] with the same fixed order as lane_sum.
inline float lane_dot(const float* x, const float* y, size_t n) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j] * y[i + j];
  }
  for (size_t j = 0; i < n; ++i, ++j) acc[j] += x[i] * y[i];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
  return acc[0];
}

// x[i] = e^(x[i] - m) in place; returns the sum of the new x[0..n) in the
// same fixed lane order as lane_sum (one pass instead of two).
inline float exp_sum_inplace(float* x, size_t n, float m) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float e = fast_exp(x[i + j] - m);
      x[i + j] = e;
      acc[j] += e;
    }
  }
  for (size_t j = 0; i < n; ++i, ++j) {
    const float e = fast_exp(x[i] - m);
    x[i] = e;
    acc[j] += e;
  }
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
  return acc[0];
}

// max of x[0..n), n >= 1.
inline float lane_max(const float* x, size_t n) {
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = x[0];
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] = acc[j] > x[i + j] ? acc[j] : x[i + j];
  }
  for (size_t j = 0; i < n; ++i, ++j) acc[j] = acc[j] > x[i] ? acc[j] : x[i];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = acc[j] > acc[j + w] ? acc[j] : acc[j + w];
  }
  return acc[0];
}

}  // namespace
}  // namespace zerodp::kernels::detail
