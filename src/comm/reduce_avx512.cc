// SPDX-License-Identifier: Apache-2.0
// The AVX-512 level of the ordered reduction (built with the avx512 flags,
// see CMakeLists.txt; called only when the CPU has them): the generic vector
// code on one zmm register per 16 lanes, streaming stores, and fp16 lanes
// converted in hardware (the same rounding as F16C's; see reduce_avx2.cc).
#include <immintrin.h>

#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

struct Avx512Isa {
  static constexpr int kLanes = 16;  // one zmm register
  using V = VecF<kLanes>;
  static constexpr bool kStream = true;
  static void stream_fp32(float* p, V v) { _mm512_stream_ps(p, reinterpret_cast<__m512>(v)); }
  static void stream_64_bytes(std::byte* dst, const std::byte* src) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
  }
  static void fence() { _mm_sfence(); }
  static constexpr bool kFp16 = true;
  // The zero-masked forms: GCC 12 warns about the plain forms' undefined
  // pass-through operand.
  static V load_fp16(const uint16_t* p) {
    return reinterpret_cast<V>(_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  static void store_fp16(uint16_t* p, V v) {
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xFFFF, reinterpret_cast<__m512>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  }
};

}  // namespace

const LevelKernels kAvx512 = {sum_any<Avx512Isa>, copy_any<Avx512Isa>};

}  // namespace zerodp::comm::reduce_kernels
