// SPDX-License-Identifier: Apache-2.0
// AVX-512 loops (compiled with the avx512 flags, see CMakeLists.txt; called only when the CPU has them). Each loop
// performs the operations of its portable twin in optim_kernels.cc, in the same order, on sixteen lanes; tails use
// masked loads and stores, and masked-off lanes are never stored. No FMA instructions are used.
#include <immintrin.h>

#include "optim/optim_kernels.h"

namespace zerodp::optim::kernels {
namespace {

constexpr size_t kLanes = 16;

__mmask16 tail_mask(size_t remaining) { return static_cast<__mmask16>((1u << remaining) - 1u); }

struct AdamVec {
  __m512 grad_scale, l2, decay_factor, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
  explicit AdamVec(const AdamScalars& s)
      : grad_scale(_mm512_set1_ps(s.grad_scale)),
        l2(_mm512_set1_ps(s.l2)),
        decay_factor(_mm512_set1_ps(s.decay_factor)),
        beta1(_mm512_set1_ps(s.beta1)),
        one_minus_beta1(_mm512_set1_ps(s.one_minus_beta1)),
        beta2(_mm512_set1_ps(s.beta2)),
        one_minus_beta2(_mm512_set1_ps(s.one_minus_beta2)),
        bc2_sqrt(_mm512_set1_ps(s.bias_correction2_sqrt)),
        eps(_mm512_set1_ps(s.eps)),
        neg_step_size(_mm512_set1_ps(s.neg_step_size)) {}
};

// One vector of the Adam update; p, m, v are updated in the registers.
template <DecayMode kMode>
inline void adam_vec(__m512& p, __m512 g, __m512& m, __m512& v, const AdamVec& s) {
  __m512 grad = _mm512_mul_ps(g, s.grad_scale);
  if constexpr (kMode == DecayMode::kL2) grad = _mm512_add_ps(grad, _mm512_mul_ps(s.l2, p));
  if constexpr (kMode == DecayMode::kDecoupled) p = _mm512_mul_ps(p, s.decay_factor);
  m = _mm512_add_ps(_mm512_mul_ps(m, s.beta1), _mm512_mul_ps(s.one_minus_beta1, grad));
  v = _mm512_add_ps(_mm512_mul_ps(v, s.beta2), _mm512_mul_ps(_mm512_mul_ps(s.one_minus_beta2, grad), grad));
  const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v), s.bc2_sqrt), s.eps);
  p = _mm512_add_ps(p, _mm512_mul_ps(s.neg_step_size, _mm512_div_ps(m, denom)));
}

template <DecayMode kMode>
void adam_loop(float* p, const float* g, float* m, float* v, size_t n, const AdamScalars& scalars) {
  const AdamVec s(scalars);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m512 pv = _mm512_loadu_ps(p + i);
    __m512 mv = _mm512_loadu_ps(m + i);
    __m512 vv = _mm512_loadu_ps(v + i);
    adam_vec<kMode>(pv, _mm512_loadu_ps(g + i), mv, vv, s);
    _mm512_storeu_ps(p + i, pv);
    _mm512_storeu_ps(m + i, mv);
    _mm512_storeu_ps(v + i, vv);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    __m512 pv = _mm512_maskz_loadu_ps(k, p + i);
    __m512 mv = _mm512_maskz_loadu_ps(k, m + i);
    __m512 vv = _mm512_maskz_loadu_ps(k, v + i);
    adam_vec<kMode>(pv, _mm512_maskz_loadu_ps(k, g + i), mv, vv, s);
    _mm512_mask_storeu_ps(p + i, k, pv);
    _mm512_mask_storeu_ps(m + i, k, mv);
    _mm512_mask_storeu_ps(v + i, k, vv);
  }
}

struct SgdVec {
  __m512 grad_scale, l2, momentum, neg_lr;
  explicit SgdVec(const SgdScalars& s)
      : grad_scale(_mm512_set1_ps(s.grad_scale)),
        l2(_mm512_set1_ps(s.l2)),
        momentum(_mm512_set1_ps(s.momentum)),
        neg_lr(_mm512_set1_ps(s.neg_lr)) {}
};

template <DecayMode kDecay, MomentumMode kMomentum, bool kNesterov>
inline void sgd_vec(__m512& p, __m512 g, __m512& buf, const SgdVec& s) {
  __m512 d = _mm512_mul_ps(g, s.grad_scale);
  if constexpr (kDecay == DecayMode::kL2) d = _mm512_add_ps(d, _mm512_mul_ps(s.l2, p));
  if constexpr (kMomentum != MomentumMode::kNone) {
    buf = kMomentum == MomentumMode::kFirst ? d : _mm512_add_ps(_mm512_mul_ps(buf, s.momentum), d);
    d = kNesterov ? _mm512_add_ps(d, _mm512_mul_ps(s.momentum, buf)) : buf;
  }
  p = _mm512_add_ps(p, _mm512_mul_ps(s.neg_lr, d));
}

template <DecayMode kDecay, MomentumMode kMomentum, bool kNesterov>
void sgd_loop(float* p, const float* g, float* buf, size_t n, const SgdScalars& scalars) {
  const SgdVec s(scalars);
  constexpr bool kHasBuf = kMomentum != MomentumMode::kNone;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m512 pv = _mm512_loadu_ps(p + i);
    __m512 bv = kMomentum == MomentumMode::kRunning ? _mm512_loadu_ps(buf + i) : _mm512_setzero_ps();
    sgd_vec<kDecay, kMomentum, kNesterov>(pv, _mm512_loadu_ps(g + i), bv, s);
    _mm512_storeu_ps(p + i, pv);
    if constexpr (kHasBuf) _mm512_storeu_ps(buf + i, bv);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    __m512 pv = _mm512_maskz_loadu_ps(k, p + i);
    __m512 bv = kMomentum == MomentumMode::kRunning ? _mm512_maskz_loadu_ps(k, buf + i) : _mm512_setzero_ps();
    sgd_vec<kDecay, kMomentum, kNesterov>(pv, _mm512_maskz_loadu_ps(k, g + i), bv, s);
    _mm512_mask_storeu_ps(p + i, k, pv);
    if constexpr (kHasBuf) _mm512_mask_storeu_ps(buf + i, k, bv);
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

struct LionVec {
  __m512 grad_scale, decay_factor, beta1, one_minus_beta1, beta2, one_minus_beta2, neg_lr, one;
  explicit LionVec(const LionScalars& s)
      : grad_scale(_mm512_set1_ps(s.grad_scale)),
        decay_factor(_mm512_set1_ps(s.decay_factor)),
        beta1(_mm512_set1_ps(s.beta1)),
        one_minus_beta1(_mm512_set1_ps(s.one_minus_beta1)),
        beta2(_mm512_set1_ps(s.beta2)),
        one_minus_beta2(_mm512_set1_ps(s.one_minus_beta2)),
        neg_lr(_mm512_set1_ps(s.neg_lr)),
        one(_mm512_set1_ps(1.0f)) {}
};

// One vector of the Lion update. The sign is the portable loop's
// (c > 0) - (c < 0) + (c - c): ordered compares (false for NaN) select 1 or
// +0 per lane, then the same subtraction and addition.
template <bool kDecay>
inline void lion_vec(__m512& p, __m512 g, __m512& m, const LionVec& s) {
  const __m512 grad = _mm512_mul_ps(g, s.grad_scale);
  if constexpr (kDecay) p = _mm512_mul_ps(p, s.decay_factor);
  const __m512 c = _mm512_add_ps(_mm512_mul_ps(m, s.beta1), _mm512_mul_ps(s.one_minus_beta1, grad));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 pos = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, zero, _CMP_GT_OQ), s.one);
  const __m512 neg = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, zero, _CMP_LT_OQ), s.one);
  const __m512 sign = _mm512_add_ps(_mm512_sub_ps(pos, neg), _mm512_sub_ps(c, c));
  p = _mm512_add_ps(p, _mm512_mul_ps(s.neg_lr, sign));
  m = _mm512_add_ps(_mm512_mul_ps(m, s.beta2), _mm512_mul_ps(s.one_minus_beta2, grad));
}

template <bool kDecay>
void lion_loop(float* p, const float* g, float* m, size_t n, const LionScalars& scalars) {
  const LionVec s(scalars);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m512 pv = _mm512_loadu_ps(p + i);
    __m512 mv = _mm512_loadu_ps(m + i);
    lion_vec<kDecay>(pv, _mm512_loadu_ps(g + i), mv, s);
    _mm512_storeu_ps(p + i, pv);
    _mm512_storeu_ps(m + i, mv);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    __m512 pv = _mm512_maskz_loadu_ps(k, p + i);
    __m512 mv = _mm512_maskz_loadu_ps(k, m + i);
    lion_vec<kDecay>(pv, _mm512_maskz_loadu_ps(k, g + i), mv, s);
    _mm512_mask_storeu_ps(p + i, k, pv);
    _mm512_mask_storeu_ps(m + i, k, mv);
  }
}

void lion_avx512(float* p, const float* g, float* m, size_t n, const LionScalars& s, bool decay) {
  if (decay) return lion_loop<true>(p, g, m, n, s);
  lion_loop<false>(p, g, m, n, s);
}

void adam_avx512(float* p, const float* g, float* m, float* v, size_t n, const AdamScalars& s, DecayMode mode) {
  switch (mode) {
    case DecayMode::kNone:
      return adam_loop<DecayMode::kNone>(p, g, m, v, n, s);
    case DecayMode::kDecoupled:
      return adam_loop<DecayMode::kDecoupled>(p, g, m, v, n, s);
    case DecayMode::kL2:
      return adam_loop<DecayMode::kL2>(p, g, m, v, n, s);
  }
}

void sgd_avx512(float* p, const float* g, float* buf, size_t n, const SgdScalars& s, DecayMode decay, MomentumMode mode,
                bool nesterov) {
  if (decay == DecayMode::kL2) return sgd_momentum<DecayMode::kL2>(p, g, buf, n, s, mode, nesterov);
  sgd_momentum<DecayMode::kNone>(p, g, buf, n, s, mode, nesterov);
}

void sum_squares_avx512(const float* x, size_t n, double* acc) {
  // Lanes 0-7 of the sixteen live in lo, lanes 8-15 in hi: element i meets
  // acc[i % 16], as in the portable loop.
  __m512d lo = _mm512_loadu_pd(acc);
  __m512d hi = _mm512_loadu_pd(acc + 8);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
    const __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
    lo = _mm512_add_pd(lo, _mm512_mul_pd(a, a));
    hi = _mm512_add_pd(hi, _mm512_mul_pd(b, b));
  }
  if (i < n) {
    // Masked-off lanes are left untouched (not even +0.0, which would turn a
    // -0.0 accumulator into +0.0).
    const __mmask16 k = tail_mask(n - i);
    const __m512 t = _mm512_maskz_loadu_ps(k, x + i);
    const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
    const __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
    lo = _mm512_mask_add_pd(lo, static_cast<__mmask8>(k & 0xFF), lo, _mm512_mul_pd(a, a));
    hi = _mm512_mask_add_pd(hi, static_cast<__mmask8>(k >> 8), hi, _mm512_mul_pd(b, b));
  }
  _mm512_storeu_pd(acc, lo);
  _mm512_storeu_pd(acc + 8, hi);
}

bool nonfinite_f32_avx512(const float* x, size_t n) {
  const __m512i exp = _mm512_set1_epi32(0x7F800000);
  __mmask16 any = 0;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512i bits = _mm512_and_si512(_mm512_loadu_si512(x + i), exp);
    any |= _mm512_cmpeq_epi32_mask(bits, exp);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    const __m512i bits = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + i), exp);
    any |= _mm512_mask_cmpeq_epi32_mask(k, bits, exp);
  }
  return any != 0;
}

bool nonfinite_u16_avx512(const uint16_t* x, size_t n, uint16_t exponent_mask) {
  constexpr size_t kShorts = 32;
  const __m512i exp = _mm512_set1_epi16(static_cast<short>(exponent_mask));
  __mmask32 any = 0;
  size_t i = 0;
  for (; i + kShorts <= n; i += kShorts) {
    const __m512i bits = _mm512_and_si512(_mm512_loadu_si512(x + i), exp);
    any |= _mm512_cmpeq_epi16_mask(bits, exp);
  }
  if (i < n) {
    const __mmask32 k = static_cast<__mmask32>((uint64_t{1} << (n - i)) - 1u);
    const __m512i bits = _mm512_and_si512(_mm512_maskz_loadu_epi16(k, x + i), exp);
    any |= _mm512_mask_cmpeq_epi16_mask(k, bits, exp);
  }
  return any != 0;
}

void scale_avx512(float* x, size_t n, float factor) {
  const __m512 f = _mm512_set1_ps(factor);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), f));
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), f));
  }
}

}  // namespace

const KernelSet kAvx512Kernels = {adam_avx512,          sgd_avx512,           lion_avx512, sum_squares_avx512,
                                  nonfinite_f32_avx512, nonfinite_u16_avx512, scale_avx512};

}  // namespace zerodp::optim::kernels
