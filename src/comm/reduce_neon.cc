// SPDX-License-Identifier: Apache-2.0
// The neon level of the ordered reduction (aarch64 builds): the generic
// vector code on four q registers per 16 lanes, ordinary stores, and fp16
// lanes converted by FCVTL/FCVTN (the rounding of core/convert_neon.cc, which
// gives dtype.h's bits; NaN sums are made canonical anyway).
#include <arm_neon.h>

#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

struct NeonIsa {
  static constexpr bool kStream = false;
  static void stream_fp32x16(float*, Vec16) {}
  static void stream_64_bytes(std::byte*, const std::byte*) {}
  static void fence() {}
  static constexpr bool kFp16 = true;
  static Vec16 load_fp16x16(const uint16_t* p) {
    float lanes[16];
    for (int q = 0; q < 4; ++q) {
      float16x4_t h;
      std::memcpy(&h, p + 4 * q, sizeof h);
      vst1q_f32(lanes + 4 * q, vcvt_f32_f16(h));
    }
    return load_fp32x16(lanes);
  }
  static void store_fp16x16(uint16_t* p, Vec16 v) {
    float lanes[16];
    std::memcpy(lanes, &v, sizeof v);
    for (int q = 0; q < 4; ++q) {
      const float16x4_t h = vcvt_f16_f32(vld1q_f32(lanes + 4 * q));
      std::memcpy(p + 4 * q, &h, sizeof h);
    }
  }
};

}  // namespace

const LevelKernels kNeon = {sum_any<NeonIsa>, copy_any<NeonIsa>};

}  // namespace zerodp::comm::reduce_kernels
