// SPDX-License-Identifier: Apache-2.0
// The avx2 level's 8-bit Adam loops (compiled with the AVX2 flags, see
// CMakeLists.txt; called only when the CPU has them): eight elements at a
// time, the operations of adam8bit_loops.h in the same order, with the
// table gathers of adam8bit_kernels_avx512.cc (_mm256_i32gather_*); the last
// n % 8 elements go through the portable loops, which do the same
// operations. No FMA instructions are used (the build forbids contraction),
// so the bits are the scalar level's.
#include <immintrin.h>

#include <cstring>

#include "optim/adam8bit_kernels.h"
#include "optim/adam8bit_loops.h"

namespace zerodp::optim::kernels {
namespace {

constexpr size_t kLanes = 8;

__m256 abs_ps(__m256 x) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }

// The largest lane (all lanes finite).
float reduce_max(__m256 x) {
  alignas(32) float lane[kLanes];
  _mm256_store_ps(lane, x);
  float out = lane[0];
  for (size_t i = 1; i < kLanes; ++i) out = out < lane[i] ? lane[i] : out;
  return out;
}

// code[bytes] * scale, for 8 codes.
__m256 dequantize(const quant8::DynamicMap& map, const uint8_t* codes, __m256 scale) {
  const __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
  return _mm256_mul_ps(_mm256_i32gather_ps(map.code.data(), index, 4), scale);
}

// The low byte of each of 8 indices, stored as 8 bytes.
void store_codes(uint8_t* out, __m256i q) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i packed = _mm256_shuffle_epi8(q, pick);
  const auto low = static_cast<uint32_t>(_mm256_extract_epi32(packed, 0));
  const auto high = static_cast<uint32_t>(_mm256_extract_epi32(packed, 4));
  std::memcpy(out, &low, 4);
  std::memcpy(out + 4, &high, 4);
}

// quant8::quantize on 8 values (adam8bit_kernels_avx512.cc's steps).
__m256i quantize_vec(const quant8::DynamicMap& map, __m256 x) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i bucket = _mm256_srli_epi32(bits, 32 - quant8::kIndexBits);
  __m256i q = _mm256_and_si256(_mm256_i32gather_epi32(reinterpret_cast<const int*>(map.first.data()), bucket, 1),
                               _mm256_set1_epi32(0xFF));
  const __m256i last_mid = _mm256_set1_epi32(254);
  const __m256i top = _mm256_set1_epi32(255);
  for (unsigned step = 0; step < map.max_steps; ++step) {
    const __m256 mid = _mm256_i32gather_ps(map.mid.data(), _mm256_min_epu32(q, last_mid), 4);
    const __m256i up =
        _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(x, mid, _CMP_GT_OQ)), _mm256_cmpgt_epi32(top, q));
    q = _mm256_sub_epi32(q, up);  // up is -1 where the index steps
  }
  if (map.is_signed) {
    // code[q] has its sign bit exactly when q < map.zero (quant8.cc checks).
    const __m256i negative = _mm256_srai_epi32(bits, 31);
    const __m256i code_negative = _mm256_cmpgt_epi32(_mm256_set1_epi32(map.zero), q);
    const __m256i differ = _mm256_xor_si256(negative, code_negative);
    q = _mm256_sub_epi32(q, _mm256_and_si256(_mm256_and_si256(differ, negative), one));
    q = _mm256_add_epi32(q, _mm256_and_si256(_mm256_andnot_si256(negative, differ), one));
  }
  return q;
}

__m256i quantize_by(const quant8::DynamicMap& map, __m256 value, float absmax) {
  if (absmax > 0.0f) return quantize_vec(map, _mm256_div_ps(value, _mm256_set1_ps(absmax)));
  return _mm256_set1_epi32(map.zero);
}

void moments_avx2(const float* grad, const uint8_t* qm, const uint8_t* qv, size_t n, float old_m, float old_v,
                  const AdamScalars& s, float* m_out, float* v_out, float* maxima) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  const __m256 grad_scale = _mm256_set1_ps(s.grad_scale), beta1 = _mm256_set1_ps(s.beta1),
               one_minus_beta1 = _mm256_set1_ps(s.one_minus_beta1), beta2 = _mm256_set1_ps(s.beta2),
               one_minus_beta2 = _mm256_set1_ps(s.one_minus_beta2), scale_m = _mm256_set1_ps(old_m),
               scale_v = _mm256_set1_ps(old_v), infinity = _mm256_set1_ps(__builtin_inff()),
               mark = _mm256_set1_ps(kNonFiniteMark);
  __m256 max_m = _mm256_setzero_ps(), max_v = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(grad + i), grad_scale);
    const __m256 m = dequantize(signed_map, qm + i, scale_m);
    const __m256 v = dequantize(unsigned_map, qv + i, scale_v);
    __m256 m_new = _mm256_add_ps(_mm256_mul_ps(m, beta1), _mm256_mul_ps(one_minus_beta1, g));
    __m256 v_new = _mm256_add_ps(_mm256_mul_ps(v, beta2), _mm256_mul_ps(_mm256_mul_ps(one_minus_beta2, g), g));
    const __m256 finite = _mm256_cmp_ps(abs_ps(v_new), infinity, _CMP_LT_OQ);
    m_new = _mm256_and_ps(finite, m_new);
    v_new = _mm256_blendv_ps(mark, v_new, finite);
    _mm256_storeu_ps(m_out + i, m_new);
    _mm256_storeu_ps(v_out + i, v_new);
    max_m = _mm256_max_ps(max_m, abs_ps(m_new));
    max_v = _mm256_max_ps(max_v, v_new);
  }
  // Maxima of finite values (the marked ones are 0 and -1) are exact in any order.
  const float lane_m = reduce_max(max_m), lane_v = reduce_max(max_v);
  maxima[0] = maxima[0] < lane_m ? lane_m : maxima[0];
  maxima[1] = maxima[1] < lane_v ? lane_v : maxima[1];
  adam8bit_moments_generic(grad + i, qm + i, qv + i, n - i, old_m, old_v, s, m_out + i, v_out + i, maxima);
}

void update_avx2(float* p, const float* m, const float* v, size_t n, float new_m, float new_v, const AdamScalars& s,
                 bool decay, uint8_t* qm, uint8_t* qv) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  const __m256 decay_factor = _mm256_set1_ps(s.decay_factor), bc2_sqrt = _mm256_set1_ps(s.bias_correction2_sqrt),
               eps = _mm256_set1_ps(s.eps), neg_step_size = _mm256_set1_ps(s.neg_step_size), zero = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 mv = _mm256_loadu_ps(m + i);
    __m256 vv = _mm256_loadu_ps(v + i);
    const __m256 keep = _mm256_cmp_ps(vv, zero, _CMP_GE_OQ);  // not kNonFiniteMark
    vv = _mm256_and_ps(keep, vv);
    const __m256 old = _mm256_loadu_ps(p + i);
    __m256 param = decay ? _mm256_mul_ps(old, decay_factor) : old;
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bc2_sqrt), eps);
    param = _mm256_add_ps(param, _mm256_mul_ps(neg_step_size, _mm256_div_ps(mv, denom)));
    _mm256_storeu_ps(p + i, _mm256_blendv_ps(old, param, keep));
    store_codes(qm + i, quantize_by(signed_map, mv, new_m));
    store_codes(qv + i, quantize_by(unsigned_map, vv, new_v));
  }
  adam8bit_update_generic(p + i, m + i, v + i, n - i, new_m, new_v, s, decay, qm + i, qv + i);
}

void quantize_avx2(const quant8::DynamicMap& map, const float* x, size_t n, uint8_t* q) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store_codes(q + i, quantize_vec(map, _mm256_loadu_ps(x + i)));
  adam8bit_quantize_generic(map, x + i, n - i, q + i);
}

}  // namespace

const Adam8bitKernels kAvx2Adam8bitKernels = {moments_avx2, update_avx2, quantize_avx2};

}  // namespace zerodp::optim::kernels
