// SPDX-License-Identifier: Apache-2.0
// The scalar level of the ordered reduction: the generic vector code for the
// build's baseline target (SSE2 on x86-64, NEON on aarch64), ordinary
// stores, and no fused fp16 path (reduce.cc widens fp16 through convert()).
#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

struct ScalarIsa {
  static constexpr bool kStream = false;
  static void stream_fp32x16(float*, Vec16) {}
  static void stream_64_bytes(std::byte*, const std::byte*) {}
  static void fence() {}
  static constexpr bool kFp16 = false;
  static Vec16 load_fp16x16(const uint16_t*) { return Vec16{}; }
  static void store_fp16x16(uint16_t*, Vec16) {}
};

}  // namespace

const LevelKernels kScalar = {sum_any<ScalarIsa>, copy_any<ScalarIsa>};

}  // namespace zerodp::comm::reduce_kernels
