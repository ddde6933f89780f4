// SPDX-License-Identifier: Apache-2.0
// The neon level of the ordered reduction (aarch64 builds): the generic
// vector code on one q register of 4 lanes, ordinary stores, and fp16
// lanes converted by FCVTL/FCVTN (the rounding of core/convert_neon.cc, which
// gives dtype.h's bits; NaN sums are made canonical anyway).
#include <arm_neon.h>

#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

struct NeonIsa {
  static constexpr int kLanes = 4;  // one q register
  using V = VecF<kLanes>;
  static constexpr bool kStream = false;
  static void stream_fp32(float*, V) {}
  static void stream_64_bytes(std::byte*, const std::byte*) {}
  static void fence() {}
  static constexpr bool kFp16 = true;
  static V load_fp16(const uint16_t* p) {
    float16x4_t h;
    std::memcpy(&h, p, sizeof h);
    return reinterpret_cast<V>(vcvt_f32_f16(h));
  }
  static void store_fp16(uint16_t* p, V v) {
    const float16x4_t h = vcvt_f16_f32(reinterpret_cast<float32x4_t>(v));
    std::memcpy(p, &h, sizeof h);
  }
};

}  // namespace

const LevelKernels kNeon = {sum_any<NeonIsa>, copy_any<NeonIsa>};

}  // namespace zerodp::comm::reduce_kernels
