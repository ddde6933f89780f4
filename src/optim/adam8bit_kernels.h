// SPDX-License-Identifier: Apache-2.0
// Internal: 8-bit Adam's element-wise loops (optim/adam8bit.h), one set per
// SIMD level (core/simd.h), as optim_kernels.h does for the other
// optimizers: the portable loops of adam8bit_loops.h compiled for the
// baseline (scalar), and hand-written AVX2 and AVX-512 loops with gathers
// from the maps' tables (avx2, avx512).
//
// A step over one piece of a quantization block is two passes: `moments`
// dequantizes the old codes and computes the new moments into scratch
// arrays (and their maxima, the block's new scales), then `update` moves the
// parameters from them and quantizes them with the block's new scales. Each
// element's values are the same float operations in the same order at every
// level, without fused multiply-add, and the maxima are exact (order-free),
// so every level gives the scalar level's bits (tests hold them against
// each other).
// Thread-safety: pure functions over caller-owned memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/simd.h"
#include "optim/optim_kernels.h"
#include "optim/quant8.h"

namespace zerodp::optim::kernels {

// The mark `moments` leaves in v for an element whose gradient or new v is
// not finite (m is 0 there): `update` keeps its parameter and quantizes both
// moments as 0 (bitsandbytes' rule, docs/optim.md).
inline constexpr float kNonFiniteMark = -1.0f;

struct Adam8bitKernels {
  // n elements of one block: with g = grad[i] * grad_scale,
  //   m = signed code[qm[i]] * old_m;  v = unsigned code[qv[i]] * old_v
  //   m_out[i] = m*beta1 + one_minus_beta1*g;  v_out[i] = v*beta2 + (one_minus_beta2*g)*g
  // (m 0 and v kNonFiniteMark when that v is not finite), and
  // maxima[0] = max(maxima[0], max |m_out|), maxima[1] = max(maxima[1], max v_out).
  void (*moments)(const float* grad, const uint8_t* qm, const uint8_t* qv, size_t n, float old_m, float old_v,
                  const AdamScalars& s, float* m_out, float* v_out, float* maxima);
  // The same n elements: unless marked, p = p*decay_factor (decay) and
  // p = p + neg_step_size * (m / (sqrt(v)/bias_correction2_sqrt + eps));
  // qm[i] = quantize(signed map, m / new_m), qv[i] = quantize(unsigned map,
  // v / new_v), the map's zero code where the scale is 0.
  void (*update)(float* p, const float* m, const float* v, size_t n, float new_m, float new_v, const AdamScalars& s,
                 bool decay, uint8_t* qm, uint8_t* qv);
  // q[i] = quant8::quantize(map, x[i]) (|x[i]| <= 1, not NaN); for the tests.
  void (*quantize)(const quant8::DynamicMap& map, const float* x, size_t n, uint8_t* q);
};

// The set of `level`; levels without a file of their own in this build use
// the scalar set.
const Adam8bitKernels& adam8bit_kernels(SimdLevel level);

extern const Adam8bitKernels kScalarAdam8bitKernels;
extern const Adam8bitKernels kAvx2Adam8bitKernels;
extern const Adam8bitKernels kAvx512Adam8bitKernels;

}  // namespace zerodp::optim::kernels
