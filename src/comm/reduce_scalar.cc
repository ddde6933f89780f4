// SPDX-License-Identifier: Apache-2.0
// The scalar level of the ordered reduction: the generic vector code for the
// build's baseline target (SSE2 on x86-64, NEON on aarch64), ordinary
// stores, and no fused fp16 path (reduce.cc widens fp16 through convert()).
#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

struct ScalarIsa {
  // One register of the baseline every x86-64 and aarch64 CPU has (SSE2's
  // xmm, NEON's q), whatever flags the build passes: the level is chosen at
  // run time (core/simd.h), never by the build.
  static constexpr int kLanes = 4;
  using V = VecF<kLanes>;
  static constexpr bool kStream = false;
  static void stream_fp32(float*, V) {}
  static void stream_64_bytes(std::byte*, const std::byte*) {}
  static void fence() {}
  static constexpr bool kFp16 = false;
  static V load_fp16(const uint16_t*) { return V{}; }
  static void store_fp16(uint16_t*, V) {}
};

}  // namespace

const LevelKernels kScalar = {sum_any<ScalarIsa>, copy_any<ScalarIsa>};

}  // namespace zerodp::comm::reduce_kernels
