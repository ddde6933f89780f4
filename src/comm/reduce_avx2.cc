// SPDX-License-Identifier: Apache-2.0
// The AVX2 level of the ordered reduction (built with the avx2 flags, see
// CMakeLists.txt; called only when the CPU has them): the generic vector
// code on two ymm registers per 16 lanes, streaming stores, and fp16 lanes
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
  static constexpr bool kStream = true;
  static void stream_fp32x16(float* p, Vec16 v) {
    // The halves straight from the two registers (not through memory).
    _mm256_stream_ps(p, __m256(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)));
    _mm256_stream_ps(p + 8, __m256(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)));
  }
  static void stream_64_bytes(std::byte* dst, const std::byte* src) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32)));
  }
  static void fence() { _mm_sfence(); }
  static constexpr bool kFp16 = true;
  static Vec16 load_fp16x16(const uint16_t* p) {
    float lanes[16];
    _mm256_storeu_ps(lanes, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    _mm256_storeu_ps(lanes + 8, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8))));
    return load_fp32x16(lanes);
  }
  static void store_fp16x16(uint16_t* p, Vec16 v) {
    float lanes[16];
    std::memcpy(lanes, &v, sizeof v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(_mm256_loadu_ps(lanes), kRound));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(_mm256_loadu_ps(lanes + 8), kRound));
  }
};

}  // namespace

const LevelKernels kAvx2 = {sum_any<Avx2Isa>, copy_any<Avx2Isa>};

}  // namespace zerodp::comm::reduce_kernels
