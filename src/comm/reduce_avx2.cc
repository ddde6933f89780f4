// SPDX-License-Identifier: Apache-2.0
// The AVX2 level of the ordered reduction (built with the avx2 flags, see
// CMakeLists.txt; called only when the CPU has them): the generic vector
// code on one ymm register of 8 lanes, streaming stores, and fp16 lanes
// converted by F16C (exact widening; narrowing rounds to nearest even with
// subnormals and overflow to infinity: dtype.h's bits for every non-NaN,
// and NaN sums are made canonical anyway).
#include <immintrin.h>

#include "comm/reduce_kernels.h"
#include "comm/reduce_vector.h"

namespace zerodp::comm::reduce_kernels {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

struct Avx2Isa {
  static constexpr int kLanes = 8;  // one ymm register
  using V = VecF<kLanes>;
  static constexpr bool kStream = true;
  static void stream_fp32(float* p, V v) { _mm256_stream_ps(p, __m256(v)); }
  static void stream_64_bytes(std::byte* dst, const std::byte* src) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32)));
  }
  static void fence() { _mm_sfence(); }
  static constexpr bool kFp16 = true;
  static V load_fp16(const uint16_t* p) {
    return V(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static void store_fp16(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(__m256(v), kRound));
  }
};

}  // namespace

const LevelKernels kAvx2 = {sum_any<Avx2Isa>, copy_any<Avx2Isa>};

}  // namespace zerodp::comm::reduce_kernels
