#include "comm/reduce.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// Elements per block on the blocked paths: the fp32 accumulator stays in L1
// while the n inputs stream through once each.
constexpr size_t kBlock = 2048;

// Sums that come out NaN become this one quiet NaN: which payload an
// addition of two NaNs keeps is the compiler's choice (operand order), and
// the result must not depend on how a kernel was compiled.
constexpr float kCanonicalNan = std::bit_cast<float>(0x7FC00000u);

// max with NaN propagation in rank order: a NaN accumulator stays, a NaN
// newcomer wins, otherwise the larger value (ties keep the accumulator).
template <typename T>
inline T max_rule(T acc, T x) {
  if (acc != acc) return acc;
  return (x > acc || x != x) ? x : acc;
}

// acc[0, len) = op-combine of contributions; `load(k, dst)` writes
// contribution k's block as fp32 into dst (or returns a pointer to it).
template <typename Load>
void combine_block(float* acc, float* tmp, size_t len, size_t n, ReduceOp op, Load&& load) {
  const float* first = load(0, acc);
  if (first != acc) std::memcpy(acc, first, len * sizeof(float));
  for (size_t k = 1; k < n; ++k) {
    const float* x = load(k, tmp);
    if (op == ReduceOp::kMax) {
      for (size_t j = 0; j < len; ++j) acc[j] = max_rule(acc[j], x[j]);
    } else {
      for (size_t j = 0; j < len; ++j) acc[j] += x[j];
    }
  }
  if (op == ReduceOp::kAvg) {
    const float divisor = static_cast<float>(n);
    for (size_t j = 0; j < len; ++j) acc[j] = acc[j] / divisor;
  }
  if (op != ReduceOp::kMax) {
    for (size_t j = 0; j < len; ++j) acc[j] = acc[j] != acc[j] ? kCanonicalNan : acc[j];
  }
}

// 16 floats as one GCC vector: the compiler maps it to whatever the target
// has (one zmm, two ymm, four xmm). Each step loads every contribution before
// it stores to any output, so an output may be exactly one of the inputs.
// Lanes are independent IEEE operations: the scalar loop's bits.
using Vec16 = float __attribute__((vector_size(64)));
using U16x16 = uint16_t __attribute__((vector_size(32)));
using U32x16 = uint32_t __attribute__((vector_size(64)));

inline Vec16 load_fp32x16(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_fp32x16(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }

// bf16 <-> fp32 on 16 lanes with dtype.h's bits: widening is a shift (NaNs
// made quiet), narrowing rounds to nearest even (NaNs stay NaN, quiet).
inline Vec16 load_bf16x16(const BFloat16* p) {
  U16x16 h;
  std::memcpy(&h, p, sizeof h);
  U32x16 w = __builtin_convertvector(h, U32x16) << 16;
  const U32x16 nan = reinterpret_cast<U32x16>((w & 0x7FFFFFFFu) > 0x7F800000u);
  w |= nan & 0x00400000u;
  return reinterpret_cast<Vec16>(w);
}

inline void store_bf16x16(BFloat16* p, Vec16 f) {
  const U32x16 x = reinterpret_cast<U32x16>(f);
  const U32x16 nan = reinterpret_cast<U32x16>((x & 0x7FFFFFFFu) > 0x7F800000u);
  const U32x16 rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const U32x16 quiet = (x >> 16) | 0x0040u;
  const U16x16 h = __builtin_convertvector((nan & quiet) | (~nan & rounded), U16x16);
  std::memcpy(static_cast<void*>(p), &h, sizeof h);
}

inline Vec16 canonical_nan(Vec16 v) {
  const U32x16 nan = reinterpret_cast<U32x16>(v != v);
  return reinterpret_cast<Vec16>((nan & 0x7FC00000u) | (~nan & reinterpret_cast<U32x16>(v)));
}

// Streaming (non-temporal) stores for large outputs: they skip reading each
// destination line before overwriting it, which on a memory-bound machine is
// a third of the traffic; they also bypass the cache, so small outputs that
// are about to be used keep ordinary stores. Compiled in when the target has
// the instructions (ZERODP_NATIVE builds), else ordinary stores.
constexpr size_t kStreamBytes = size_t{4} << 20;
#if defined(__AVX512F__)
constexpr bool kCanStream = true;
inline void stream_fp32x16(float* p, Vec16 v) { _mm512_stream_ps(p, reinterpret_cast<__m512>(v)); }
inline void stream_64_bytes(std::byte* dst, const std::byte* src) {
  _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
}
inline void stream_fence() { _mm_sfence(); }
#else
constexpr bool kCanStream = false;
inline void stream_fp32x16(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }
inline void stream_64_bytes(std::byte* dst, const std::byte* src) { std::memcpy(dst, src, 64); }
inline void stream_fence() {}
#endif

// Whether every pointer has the same offset within a 64-byte line.
bool same_line_offset(std::span<void* const> ptrs) {
  const auto first = reinterpret_cast<uintptr_t>(ptrs[0]) % 64;
  return std::all_of(ptrs.begin(), ptrs.end(), [&](void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == first; });
}

// fp16 <-> fp32 on 16 lanes with the x86 conversion instructions (exact
// widening; narrowing rounds to nearest even with subnormals and overflow
// to infinity), which give dtype.h's bits for every non-NaN value, and sums
// make NaNs canonical anyway. Without AVX-512 fp16 takes the blocked path.
#if defined(__AVX512F__)
constexpr bool kFusedFp16 = true;
inline Vec16 load_fp16x16(const Half* p) {
  // The zero-masked forms: GCC 12 warns about the plain forms' undefined
  // pass-through operand.
  return reinterpret_cast<Vec16>(
      _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
}
inline void store_fp16x16(Half* p, Vec16 v) {
  const __m256i h =
      _mm512_maskz_cvtps_ph(0xFFFF, reinterpret_cast<__m512>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
}
#else
constexpr bool kFusedFp16 = false;
inline Vec16 load_fp16x16(const Half* p) {
  alignas(64) float f[16];
  for (int j = 0; j < 16; ++j) f[j] = half_to_float(p[j]);
  return load_fp32x16(f);
}
inline void store_fp16x16(Half* p, Vec16 v) {
  for (int j = 0; j < 16; ++j) p[j] = float_to_half(v[j]);
}
#endif

inline float to_float(float x) { return x; }
inline float to_float(BFloat16 x) { return bfloat16_to_float(x); }
inline float to_float(Half x) { return half_to_float(x); }
inline void from_float(float f, float* out) { *out = f; }
inline void from_float(float f, BFloat16* out) { *out = float_to_bfloat16(f); }
inline void from_float(float f, Half* out) { *out = float_to_half(f); }
inline Vec16 load_x16(const float* p) { return load_fp32x16(p); }
inline Vec16 load_x16(const BFloat16* p) { return load_bf16x16(p); }
inline Vec16 load_x16(const Half* p) { return load_fp16x16(p); }
inline void store_x16(Half* p, Vec16 v) { store_fp16x16(p, v); }
inline void store_x16(float* p, Vec16 v) { store_fp32x16(p, v); }
inline void store_x16(BFloat16* p, Vec16 v) { store_bf16x16(p, v); }

// Sum (or average) of fp32, bf16 or (with AVX-512) fp16 contributions, fused: every input read
// once, the result written to every output, nothing staged.
template <typename T>
void sum_fused(std::span<const void* const> ins, std::span<void* const> outs, size_t count, bool average) {
  const size_t n = ins.size();
  const float divisor = static_cast<float>(n);
  const Vec16 vdivisor = Vec16{} + divisor;
  const auto* const* in = reinterpret_cast<const T* const*>(ins.data());
  T* const* out = reinterpret_cast<T* const*>(outs.data());
  const size_t m = outs.size();
  size_t i = 0;
  // fp32 outputs of 4 MiB and more are written with streaming stores, once
  // the scalar head below has brought every output to a 64-byte line.
  size_t head = 0;
  bool stream = false;
  if constexpr (std::is_same_v<T, float>) {
    stream = kCanStream && count * sizeof(float) * m >= kStreamBytes && same_line_offset(outs);
    if (stream) head = std::min(count, (64 - reinterpret_cast<uintptr_t>(out[0]) % 64) % 64 / sizeof(float));
  }
  for (; i < head; ++i) {
    float acc = to_float(in[0][i]);
    for (size_t k = 1; k < n; ++k) acc += to_float(in[k][i]);
    if (average) acc = acc / divisor;
    if (acc != acc) acc = kCanonicalNan;
    for (size_t o = 0; o < m; ++o) from_float(acc, out[o] + i);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (stream) {
      for (; i + 16 <= count; i += 16) {
        Vec16 acc = load_x16(in[0] + i);
        for (size_t k = 1; k < n; ++k) acc += load_x16(in[k] + i);
        if (average) acc = acc / vdivisor;
        acc = canonical_nan(acc);
        for (size_t o = 0; o < m; ++o) stream_fp32x16(out[o] + i, acc);
      }
      stream_fence();
    }
  }
  if (n == 2 && m == 1) {  // the common single-output case, without inner loops
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = load_x16(in[0] + i) + load_x16(in[1] + i);
      if (average) acc = acc / vdivisor;
      store_x16(out[0] + i, canonical_nan(acc));
    }
  } else {
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = load_x16(in[0] + i);
      for (size_t k = 1; k < n; ++k) acc += load_x16(in[k] + i);
      if (average) acc = acc / vdivisor;
      acc = canonical_nan(acc);
      for (size_t o = 0; o < m; ++o) store_x16(out[o] + i, acc);
    }
  }
  for (; i < count; ++i) {
    float acc = to_float(in[0][i]);
    for (size_t k = 1; k < n; ++k) acc += to_float(in[k][i]);
    if (average) acc = acc / divisor;
    if (acc != acc) acc = kCanonicalNan;
    for (size_t o = 0; o < m; ++o) from_float(acc, out[o] + i);
  }
}

// Everything else (kMax; fp16 without AVX-512): blocks widened to fp32 in L1, combined,
// rounded once into a block of the dtype, then copied to every output.
template <typename T>
void reduce_blocked(std::span<const void* const> ins, std::span<void* const> outs, size_t count, ReduceOp op) {
  alignas(64) float acc[kBlock];
  alignas(64) float tmp[kBlock];
  alignas(64) T rounded[kBlock];
  const size_t n = ins.size();
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t len = std::min(kBlock, count - start);
    combine_block(acc, tmp, len, n, op, [&](size_t k, float* dst) -> const float* {
      const T* src = static_cast<const T*>(ins[k]) + start;
      if constexpr (std::is_same_v<T, float>) {
        (void)dst;
        return src;
      } else {
        convert(std::span<const T>(src, len), std::span<float>(dst, len));
        return dst;
      }
    });
    if constexpr (std::is_same_v<T, float>) {
      for (void* o : outs) std::memcpy(static_cast<T*>(o) + start, acc, len * sizeof(T));
    } else {
      convert(std::span<const float>(acc, len), std::span<T>(rounded, len));
      for (void* o : outs) std::memcpy(static_cast<void*>(static_cast<T*>(o) + start), rounded, len * sizeof(T));
    }
  }
}

}  // namespace

void reduce_ordered_into_all(std::span<const void* const> ins, std::span<void* const> outs, size_t count,
                             Dtype dtype, ReduceOp op) {
  ZDP_CHECK(!ins.empty() && !outs.empty(), CommError, "[reduce] no contributions or no outputs");
  const bool sum = op != ReduceOp::kMax;
  const bool average = op == ReduceOp::kAvg;
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32:
      return sum ? sum_fused<float>(ins, outs, count, average) : reduce_blocked<float>(ins, outs, count, op);
    case Dtype::Kind::kFp16:
      return sum && kFusedFp16 ? sum_fused<Half>(ins, outs, count, average) : reduce_blocked<Half>(ins, outs, count, op);
    case Dtype::Kind::kBf16:
      return sum ? sum_fused<BFloat16>(ins, outs, count, average) : reduce_blocked<BFloat16>(ins, outs, count, op);
  }
}

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (!kCanStream || bytes < kStreamBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const size_t head = (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) stream_64_bytes(d + i, s + i);
  stream_fence();
  std::memcpy(d + i, s + i, bytes - i);
}

void reduce_ordered(std::span<const void* const> ins, void* out, size_t count, Dtype dtype, ReduceOp op) {
  void* const outs[1] = {out};
  reduce_ordered_into_all(ins, outs, count, dtype, op);
}

double reduce_scalars(std::span<const double> values, ReduceOp op) {
  ZDP_CHECK(!values.empty(), CommError, "[reduce] no contributions to reduce");
  double acc = values[0];
  for (size_t k = 1; k < values.size(); ++k) {
    acc = op == ReduceOp::kMax ? max_rule(acc, values[k]) : acc + values[k];
  }
  if (op == ReduceOp::kAvg) acc /= static_cast<double>(values.size());
  return acc;
}

}  // namespace zerodp::comm
