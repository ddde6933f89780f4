// SPDX-License-Identifier: Apache-2.0
// Internal: the portable loops of 8-bit Adam (adam8bit_kernels.h), written
// once: adam8bit_kernels.cc's scalar level, and the tails of
// adam8bit_kernels_avx2.cc's loops. Include only from those files:
// everything here is in an anonymous namespace.
#pragma once

#include <algorithm>
#include <cmath>

#include "optim/adam8bit_kernels.h"

namespace zerodp::optim::kernels {
// Internal linkage on purpose: each file that includes it compiles its own copy.
namespace {  // NOLINT(cert-dcl59-cpp)

void adam8bit_moments_generic(const float* grad, const uint8_t* qm, const uint8_t* qv, size_t n, float old_m,
                              float old_v, const AdamScalars& s, float* m_out, float* v_out, float* maxima) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  float max_m = maxima[0], max_v = maxima[1];
  for (size_t i = 0; i < n; ++i) {
    const float g = grad[i] * s.grad_scale;
    const float m = signed_map.code[qm[i]] * old_m;
    const float v = unsigned_map.code[qv[i]] * old_v;
    float m_new = m * s.beta1 + s.one_minus_beta1 * g;
    float v_new = v * s.beta2 + (s.one_minus_beta2 * g) * g;
    if (!std::isfinite(v_new)) {
      m_new = 0.0f;
      v_new = kNonFiniteMark;
    }
    m_out[i] = m_new;
    v_out[i] = v_new;
    max_m = std::max(max_m, std::fabs(m_new));
    max_v = std::max(max_v, v_new);
  }
  maxima[0] = max_m;
  maxima[1] = max_v;
}

inline uint8_t quantize_by(const quant8::DynamicMap& map, float value, float absmax) {
  return absmax > 0.0f ? quant8::quantize(map, value / absmax) : map.zero;
}

void adam8bit_update_generic(float* p, const float* m, const float* v, size_t n, float new_m, float new_v,
                             const AdamScalars& s, bool decay, uint8_t* qm, uint8_t* qv) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  for (size_t i = 0; i < n; ++i) {
    float vi = v[i];
    if (vi != kNonFiniteMark) {
      float param = p[i];
      if (decay) param = param * s.decay_factor;
      const float denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;
      p[i] = param + s.neg_step_size * (m[i] / denom);
    } else {
      vi = 0.0f;
    }
    qm[i] = quantize_by(signed_map, m[i], new_m);
    qv[i] = quantize_by(unsigned_map, vi, new_v);
  }
}

void adam8bit_quantize_generic(const quant8::DynamicMap& map, const float* x, size_t n, uint8_t* q) {
  for (size_t i = 0; i < n; ++i) q[i] = quant8::quantize(map, x[i]);
}

[[maybe_unused]] constexpr Adam8bitKernels kGenericAdam8bitKernels = {adam8bit_moments_generic, adam8bit_update_generic,
                                                                      adam8bit_quantize_generic};

}  // namespace
}  // namespace zerodp::optim::kernels
