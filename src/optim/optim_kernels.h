// SPDX-License-Identifier: Apache-2.0
// Internal: the element-wise loops behind the optimizers and the gradient
// helpers, one set per SIMD level (core/simd.h): the portable loops of
// optim_loops.h compiled for the baseline (scalar) and with the AVX2 flags
// (avx2), and hand-written AVX-512 loops (avx512).
//
// Contract shared by every set: each output element is a function of the
// same-index input elements and the scalars only, computed in float with the
// operations in the order written in optim_loops.h, without fused
// multiply-add. IEEE add/mul/div/sqrt are correctly rounded in every set, so
// every level gives bit-identical results to the scalar one, for any
// count and any alignment (tests hold them against each other).
// Thread-safety: pure functions over caller-owned memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/simd.h"

namespace zerodp::optim::kernels {

// How weight decay enters an update.
enum class DecayMode : uint8_t {
  kNone = 0,       // no decay for these elements
  kDecoupled = 1,  // AdamW: p = p * (1 - lr*wd) before the update
  kL2 = 2,         // Adam/SGD: g = g + wd * p
};

// Per-step scalars of Adam/AdamW, already rounded to float once (in double
// on the host, as PyTorch computes its Python-float scalars).
struct AdamScalars {
  float grad_scale = 1.0f;    // g = grad * grad_scale (unscale and clip)
  float l2 = 0.0f;            // kL2: g = g + l2 * p
  float decay_factor = 1.0f;  // kDecoupled: p = p * decay_factor
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float bias_correction2_sqrt = 1.0f;  // sqrt(1 - beta2^t)
  float eps = 1e-8f;
  float neg_step_size = 0.0f;  // -lr / (1 - beta1^t)
};

// Per-step scalars of SGD with momentum (dampening 0).
struct SgdScalars {
  float grad_scale = 1.0f;  // g = grad * grad_scale
  float l2 = 0.0f;          // kL2: g = g + l2 * p
  float momentum = 0.0f;
  float neg_lr = 0.0f;
};

// Per-step scalars of Lion.
struct LionScalars {
  float grad_scale = 1.0f;    // g = grad * grad_scale
  float decay_factor = 1.0f;  // decay: p = p * decay_factor (1 - lr*wd)
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.99f;
  float one_minus_beta2 = 0.01f;
  float neg_lr = 0.0f;  // -lr
};

enum class MomentumMode : uint8_t {
  kNone = 0,     // plain SGD: d = g
  kFirst = 1,    // first step: buf = g
  kRunning = 2,  // buf = buf * momentum + g
};

// acc[i % 16] += double(x[i]) * double(x[i]) (each square is exact in
// double). A long series is processed in several calls whose counts, except
// the last, are multiples of 16, so element i always meets the same lane.
inline constexpr size_t kSumLanes = 16;

// One SIMD level's loops. Every level's set performs the same operations.
struct KernelSet {
  // p, m, v updated in place; g read only. n elements each.
  void (*adam)(float* p, const float* g, float* m, float* v, size_t n, const AdamScalars& s, DecayMode mode);
  // buf may be null when mode is kNone.
  void (*sgd)(float* p, const float* g, float* buf, size_t n, const SgdScalars& s, DecayMode decay, MomentumMode mode,
              bool nesterov);
  // p and m updated in place; decay: p = p * decay_factor first.
  void (*lion)(float* p, const float* g, float* m, size_t n, const LionScalars& s, bool decay);
  void (*sum_squares)(const float* x, size_t n, double* acc);
  // True when some element has all exponent bits set (infinity or NaN).
  bool (*nonfinite_f32)(const float* x, size_t n);
  // 16-bit formats: exponent_mask is 0x7C00 for fp16 and 0x7F80 for bf16.
  bool (*nonfinite_u16)(const uint16_t* x, size_t n, uint16_t exponent_mask);
  // x[i] = x[i] * factor.
  void (*scale)(float* x, size_t n, float factor);
};

// The set of `level` (core/simd.h); levels without a file of their own in
// this build use the scalar set.
const KernelSet& kernel_set(SimdLevel level);

// Each level's file defines its set (x86-64 builds only for avx2/avx512).
extern const KernelSet kScalarKernels;
extern const KernelSet kAvx2Kernels;
extern const KernelSet kAvx512Kernels;

}  // namespace zerodp::optim::kernels
