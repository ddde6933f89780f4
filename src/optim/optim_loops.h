// SPDX-License-Identifier: Apache-2.0
// Internal to optim/: the portable element-wise loops, the reference form of
// every optimizer kernel, with internal linkage so that each level's file
// (optim_kernels.cc for scalar, optim_kernels_avx2.cc) compiles its own copy
// with its own flags and the linker never mixes them. The AVX-512 loops in
// optim_kernels_avx512.cc perform exactly these operations, in this order,
// on sixteen elements at a time.
#pragma once

#include <bit>
#include <cmath>
#include <cstring>

#include "optim/optim_kernels.h"

namespace zerodp::optim::kernels {
// Internal linkage on purpose: each level's file compiles its own copy.
namespace {  // NOLINT(cert-dcl59-cpp)

template <DecayMode kMode>
void adam_loop(float* p, const float* g, float* m, float* v, size_t n, const AdamScalars& s) {
  for (size_t i = 0; i < n; ++i) {
    float grad = g[i] * s.grad_scale;
    float param = p[i];
    if constexpr (kMode == DecayMode::kL2) grad = grad + s.l2 * param;
    if constexpr (kMode == DecayMode::kDecoupled) param = param * s.decay_factor;
    // m = b1*m + (1-b1)*g;  v = b2*v + ((1-b2)*g)*g   (PyTorch's mul_/add_ and addcmul_)
    const float m_new = m[i] * s.beta1 + s.one_minus_beta1 * grad;
    const float v_new = v[i] * s.beta2 + (s.one_minus_beta2 * grad) * grad;
    // denom = sqrt(v) / sqrt(1-b2^t) + eps;  p = p + (-lr/(1-b1^t)) * (m / denom)
    const float denom = std::sqrt(v_new) / s.bias_correction2_sqrt + s.eps;
    p[i] = param + s.neg_step_size * (m_new / denom);
    m[i] = m_new;
    v[i] = v_new;
  }
}

template <DecayMode kDecay, MomentumMode kMomentum, bool kNesterov>
void sgd_loop(float* p, const float* g, float* buf, size_t n, const SgdScalars& s) {
  for (size_t i = 0; i < n; ++i) {
    float d = g[i] * s.grad_scale;
    if constexpr (kDecay == DecayMode::kL2) d = d + s.l2 * p[i];
    if constexpr (kMomentum != MomentumMode::kNone) {
      const float b = kMomentum == MomentumMode::kFirst ? d : buf[i] * s.momentum + d;
      buf[i] = b;
      d = kNesterov ? d + s.momentum * b : b;
    }
    p[i] = p[i] + s.neg_lr * d;
  }
}

// Lion's sign: for a finite c, (c > 0) - (c < 0) gives +1, -1 or +0 (for
// both zeros: sign(0) = 0, so the parameter only decays); c - c is +0 for a
// finite c and NaN for a NaN or infinite one, so adding it keeps the sign
// exact and turns a non-finite c into NaN (the parameter goes NaN, as
// AdamW's does, instead of freezing or drifting silently).
template <bool kDecay>
void lion_loop(float* p, const float* g, float* m, size_t n, const LionScalars& s) {
  for (size_t i = 0; i < n; ++i) {
    const float grad = g[i] * s.grad_scale;
    float param = p[i];
    if constexpr (kDecay) param = param * s.decay_factor;
    // c = b1*m + (1-b1)*g;  p = p + (-lr)*sign(c);  m = b2*m + (1-b2)*g
    const float c = m[i] * s.beta1 + s.one_minus_beta1 * grad;
    const float sign = (static_cast<float>(c > 0.0f) - static_cast<float>(c < 0.0f)) + (c - c);
    p[i] = param + s.neg_lr * sign;
    m[i] = m[i] * s.beta2 + s.one_minus_beta2 * grad;
  }
}

template <DecayMode kDecay, MomentumMode kMomentum>
void sgd_nesterov(float* p, const float* g, float* buf, size_t n, const SgdScalars& s, bool nesterov) {
  if (nesterov) return sgd_loop<kDecay, kMomentum, true>(p, g, buf, n, s);
  sgd_loop<kDecay, kMomentum, false>(p, g, buf, n, s);
}

template <DecayMode kDecay>
void sgd_momentum(float* p, const float* g, float* buf, size_t n, const SgdScalars& s, MomentumMode mode,
                  bool nesterov) {
  switch (mode) {
    case MomentumMode::kNone:
      return sgd_loop<kDecay, MomentumMode::kNone, false>(p, g, buf, n, s);
    case MomentumMode::kFirst:
      return sgd_nesterov<kDecay, MomentumMode::kFirst>(p, g, buf, n, s, nesterov);
    case MomentumMode::kRunning:
      return sgd_nesterov<kDecay, MomentumMode::kRunning>(p, g, buf, n, s, nesterov);
  }
}

void adam_generic(float* p, const float* g, float* m, float* v, size_t n, const AdamScalars& s, DecayMode mode) {
  switch (mode) {
    case DecayMode::kNone:
      return adam_loop<DecayMode::kNone>(p, g, m, v, n, s);
    case DecayMode::kDecoupled:
      return adam_loop<DecayMode::kDecoupled>(p, g, m, v, n, s);
    case DecayMode::kL2:
      return adam_loop<DecayMode::kL2>(p, g, m, v, n, s);
  }
}

void sgd_generic(float* p, const float* g, float* buf, size_t n, const SgdScalars& s, DecayMode decay,
                 MomentumMode mode, bool nesterov) {
  if (decay == DecayMode::kL2) return sgd_momentum<DecayMode::kL2>(p, g, buf, n, s, mode, nesterov);
  sgd_momentum<DecayMode::kNone>(p, g, buf, n, s, mode, nesterov);
}

void lion_generic(float* p, const float* g, float* m, size_t n, const LionScalars& s, bool decay) {
  if (decay) return lion_loop<true>(p, g, m, n, s);
  lion_loop<false>(p, g, m, n, s);
}

void sum_squares_generic(const float* x, size_t n, double* acc) {
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]);
    acc[i % kSumLanes] += d * d;
  }
}

bool nonfinite_f32_generic(const float* x, size_t n) {
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    any |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
  }
  return any != 0;
}

bool nonfinite_u16_generic(const uint16_t* x, size_t n, uint16_t exponent_mask) {
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) any |= static_cast<uint32_t>((x[i] & exponent_mask) == exponent_mask);
  return any != 0;
}

void scale_generic(float* x, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] * factor;
}

constexpr KernelSet kGenericKernels = {adam_generic,          sgd_generic,           lion_generic, sum_squares_generic,
                                       nonfinite_f32_generic, nonfinite_u16_generic, scale_generic};

}  // namespace
}  // namespace zerodp::optim::kernels
