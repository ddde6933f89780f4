// SPDX-License-Identifier: Apache-2.0
// The avx512 level's 8-bit Adam loops (compiled with the avx512 flags, see
// CMakeLists.txt; called only when the CPU has them). Sixteen elements at a
// time, the operations of adam8bit_loops.h in the same order: codes widen to
// 32-bit indices and gather their floats from the maps; quantize gathers
// first[] (a 32-bit gather at a byte offset, hence the map's 3 padding
// bytes), takes the map's max_steps compare-and-step rounds against the
// gathered midpoints and, for the signed map, the same sign rule. Tails use
// masked loads and stores. No FMA instructions are used.
#include <immintrin.h>

#include "optim/adam8bit_kernels.h"

namespace zerodp::optim::kernels {
namespace {

constexpr size_t kLanes = 16;

__mmask16 lanes(size_t remaining) {
  return remaining >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1u);
}

__m512 abs_ps(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF)));
}

// The largest lane (all lanes finite; GCC 12 warns falsely inside
// _mm512_reduce_max_ps).
float reduce_max(__m512 x) {
  alignas(64) float lane[kLanes];
  _mm512_store_ps(lane, x);
  float out = lane[0];
  for (size_t i = 1; i < kLanes; ++i) out = out < lane[i] ? lane[i] : out;
  return out;
}

// code[bytes] * scale, for 16 codes.
__m512 dequantize(const quant8::DynamicMap& map, __m128i bytes, __m512 scale) {
  return _mm512_mul_ps(_mm512_i32gather_ps(_mm512_cvtepu8_epi32(bytes), map.code.data(), 4), scale);
}

// quant8::quantize on 16 values.
__m512i quantize_vec(const quant8::DynamicMap& map, __m512 x) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i bucket = _mm512_srli_epi32(bits, 32 - quant8::kIndexBits);
  __m512i q = _mm512_and_si512(_mm512_i32gather_epi32(bucket, map.first.data(), 1), _mm512_set1_epi32(0xFF));
  const __m512i last_mid = _mm512_set1_epi32(254);
  const __m512i top = _mm512_set1_epi32(255);
  for (unsigned step = 0; step < map.max_steps; ++step) {
    const __m512 mid = _mm512_i32gather_ps(_mm512_min_epu32(q, last_mid), map.mid.data(), 4);
    const __mmask16 up = _mm512_cmp_ps_mask(x, mid, _CMP_GT_OQ) & _mm512_cmplt_epu32_mask(q, top);
    q = _mm512_mask_add_epi32(q, up, q, one);
  }
  if (map.is_signed) {
    // code[q] has its sign bit exactly when q < map.zero (quant8.cc checks).
    const __m512i zero = _mm512_setzero_si512();
    const __mmask16 negative = _mm512_cmplt_epi32_mask(bits, zero);
    const __mmask16 code_negative = _mm512_cmplt_epu32_mask(q, _mm512_set1_epi32(map.zero));
    const auto differ = static_cast<__mmask16>(negative ^ code_negative);
    q = _mm512_mask_sub_epi32(q, differ & negative, q, one);
    q = _mm512_mask_add_epi32(q, differ & static_cast<__mmask16>(~negative), q, one);
  }
  return q;
}

// The codes of value / absmax, or the map's zero code when absmax is 0.
__m512i quantize_by(const quant8::DynamicMap& map, __m512 value, float absmax) {
  if (absmax > 0.0f) return quantize_vec(map, _mm512_div_ps(value, _mm512_set1_ps(absmax)));
  return _mm512_set1_epi32(map.zero);
}

void moments_avx512(const float* grad, const uint8_t* qm, const uint8_t* qv, size_t n, float old_m, float old_v,
                    const AdamScalars& s, float* m_out, float* v_out, float* maxima) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  const __m512 grad_scale = _mm512_set1_ps(s.grad_scale), beta1 = _mm512_set1_ps(s.beta1),
               one_minus_beta1 = _mm512_set1_ps(s.one_minus_beta1), beta2 = _mm512_set1_ps(s.beta2),
               one_minus_beta2 = _mm512_set1_ps(s.one_minus_beta2), scale_m = _mm512_set1_ps(old_m),
               scale_v = _mm512_set1_ps(old_v), infinity = _mm512_set1_ps(__builtin_inff()),
               mark = _mm512_set1_ps(kNonFiniteMark);
  __m512 max_m = _mm512_setzero_ps(), max_v = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += kLanes) {
    const __mmask16 k = lanes(n - i);
    const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, grad + i), grad_scale);
    const __m512 m = dequantize(signed_map, _mm_maskz_loadu_epi8(k, qm + i), scale_m);
    const __m512 v = dequantize(unsigned_map, _mm_maskz_loadu_epi8(k, qv + i), scale_v);
    __m512 m_new = _mm512_add_ps(_mm512_mul_ps(m, beta1), _mm512_mul_ps(one_minus_beta1, g));
    __m512 v_new = _mm512_add_ps(_mm512_mul_ps(v, beta2), _mm512_mul_ps(_mm512_mul_ps(one_minus_beta2, g), g));
    const __mmask16 finite = _mm512_cmp_ps_mask(abs_ps(v_new), infinity, _CMP_LT_OQ);
    m_new = _mm512_maskz_mov_ps(finite, m_new);
    v_new = _mm512_mask_blend_ps(finite, mark, v_new);
    _mm512_mask_storeu_ps(m_out + i, k, m_new);
    _mm512_mask_storeu_ps(v_out + i, k, v_new);
    max_m = _mm512_mask_max_ps(max_m, k, max_m, abs_ps(m_new));
    max_v = _mm512_mask_max_ps(max_v, k, max_v, v_new);
  }
  // Maxima of finite values (the marked ones are 0 and -1) are exact in any order.
  const float lane_m = reduce_max(max_m), lane_v = reduce_max(max_v);
  maxima[0] = maxima[0] < lane_m ? lane_m : maxima[0];
  maxima[1] = maxima[1] < lane_v ? lane_v : maxima[1];
}

void update_avx512(float* p, const float* m, const float* v, size_t n, float new_m, float new_v, const AdamScalars& s,
                   bool decay, uint8_t* qm, uint8_t* qv) {
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  const __m512 decay_factor = _mm512_set1_ps(s.decay_factor), bc2_sqrt = _mm512_set1_ps(s.bias_correction2_sqrt),
               eps = _mm512_set1_ps(s.eps), neg_step_size = _mm512_set1_ps(s.neg_step_size), zero = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += kLanes) {
    const __mmask16 k = lanes(n - i);
    const __m512 mv = _mm512_maskz_loadu_ps(k, m + i);
    __m512 vv = _mm512_maskz_loadu_ps(k, v + i);
    const __mmask16 keep = _mm512_cmp_ps_mask(vv, zero, _CMP_GE_OQ);  // not kNonFiniteMark
    vv = _mm512_maskz_mov_ps(keep, vv);
    __m512 param = _mm512_maskz_loadu_ps(k, p + i);
    if (decay) param = _mm512_mul_ps(param, decay_factor);
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), bc2_sqrt), eps);
    param = _mm512_add_ps(param, _mm512_mul_ps(neg_step_size, _mm512_div_ps(mv, denom)));
    _mm512_mask_storeu_ps(p + i, static_cast<__mmask16>(k & keep), param);
    _mm512_mask_cvtepi32_storeu_epi8(qm + i, k, quantize_by(signed_map, mv, new_m));
    _mm512_mask_cvtepi32_storeu_epi8(qv + i, k, quantize_by(unsigned_map, vv, new_v));
  }
}

void quantize_avx512(const quant8::DynamicMap& map, const float* x, size_t n, uint8_t* q) {
  for (size_t i = 0; i < n; i += kLanes) {
    const __mmask16 k = lanes(n - i);
    _mm512_mask_cvtepi32_storeu_epi8(q + i, k, quantize_vec(map, _mm512_maskz_loadu_ps(k, x + i)));
  }
}

}  // namespace

const Adam8bitKernels kAvx512Adam8bitKernels = {moments_avx512, update_avx512, quantize_avx512};

}  // namespace zerodp::optim::kernels
