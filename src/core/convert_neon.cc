// SPDX-License-Identifier: Apache-2.0
// NEON fp16 conversion loops for aarch64, where they pay: the portable
// fp16 conversion is bit manipulation per element, while FCVTL/FCVTN
// convert four lanes in one instruction. (bf16 stays with the portable
// loops, which the compiler vectorises with NEON already.) Exact widening;
// narrowing rounds to nearest even with subnormals and overflow to infinity,
// NaNs quieted with the payload's top bits kept: dtype.h's bits, as the
// tests check. Relies on the default FPCR (round to nearest, no flush to
// zero), which Linux gives every thread. No inline function from a shared
// header is called here.
#include <arm_neon.h>

#include <cstring>

#include "core/convert_kernels.h"

namespace zerodp::convert_kernels {

void float_to_half_neon(const float* src, Half* dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float16x4_t h = vcvt_f16_f32(vld1q_f32(src + i));
    std::memcpy(static_cast<void*>(dst + i), &h, sizeof h);
  }
  if (i < n) {
    float in[4] = {};
    std::memcpy(in, src + i, (n - i) * sizeof(float));
    const float16x4_t h = vcvt_f16_f32(vld1q_f32(in));
    std::memcpy(static_cast<void*>(dst + i), &h, (n - i) * sizeof(Half));
  }
}

void half_to_float_neon(const Half* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    float16x4_t h;
    std::memcpy(&h, src + i, sizeof h);
    vst1q_f32(dst + i, vcvt_f32_f16(h));
  }
  if (i < n) {
    uint16_t in[4] = {};
    std::memcpy(in, src + i, (n - i) * sizeof(Half));
    float16x4_t h;
    std::memcpy(&h, in, sizeof h);
    float out[4];
    vst1q_f32(out, vcvt_f32_f16(h));
    std::memcpy(dst + i, out, (n - i) * sizeof(float));
  }
}

}  // namespace zerodp::convert_kernels
