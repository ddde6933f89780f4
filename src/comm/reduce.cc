#include "comm/reduce.h"

#include <cstring>

#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// Elements per block: the fp32 accumulator stays in L1 while the n inputs
// stream through once each.
constexpr size_t kBlock = 2048;

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
}

// 16 floats as one GCC vector: the compiler maps it to whatever the target
// has (one zmm, two ymm, four xmm). Each step loads every contribution before
// storing, so out may be exactly one of the inputs. Lanes are independent
// IEEE operations, so the result equals the scalar loop's bit for bit.
using Vec16 = float __attribute__((vector_size(64)));

inline Vec16 load16(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void sum_fp32(std::span<const void* const> ins, float* out, size_t count, bool average) {
  const size_t n = ins.size();
  const float divisor = static_cast<float>(n);
  const Vec16 vdivisor = Vec16{} + divisor;
  const auto* const* in = reinterpret_cast<const float* const*>(ins.data());
  size_t i = 0;
  if (n == 2) {  // the common case, without the inner loop
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = load16(in[0] + i) + load16(in[1] + i);
      if (average) acc = acc / vdivisor;
      std::memcpy(out + i, &acc, sizeof acc);
    }
  } else {
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = load16(in[0] + i);
      for (size_t k = 1; k < n; ++k) acc += load16(in[k] + i);
      if (average) acc = acc / vdivisor;
      std::memcpy(out + i, &acc, sizeof acc);
    }
  }
  for (; i < count; ++i) {
    float acc = in[0][i];
    for (size_t k = 1; k < n; ++k) acc += in[k][i];
    out[i] = average ? acc / divisor : acc;
  }
}

// bf16 <-> fp32 on 16 lanes, the same bits as dtype.h's scalar functions:
// widening is a shift (NaNs made quiet), narrowing rounds to nearest even
// (NaNs stay NaN, made quiet). Fused into the sum so bf16 inputs are read
// once and never staged.
using U16x16 = uint16_t __attribute__((vector_size(32)));
using U32x16 = uint32_t __attribute__((vector_size(64)));

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

void sum_bf16(std::span<const void* const> ins, BFloat16* out, size_t count, bool average) {
  const size_t n = ins.size();
  const float divisor = static_cast<float>(n);
  const Vec16 vdivisor = Vec16{} + divisor;
  const auto* const* in = reinterpret_cast<const BFloat16* const*>(ins.data());
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    Vec16 acc = load_bf16x16(in[0] + i);
    for (size_t k = 1; k < n; ++k) acc += load_bf16x16(in[k] + i);
    if (average) acc = acc / vdivisor;
    store_bf16x16(out + i, acc);
  }
  for (; i < count; ++i) {
    float acc = bfloat16_to_float(in[0][i]);
    for (size_t k = 1; k < n; ++k) acc += bfloat16_to_float(in[k][i]);
    out[i] = float_to_bfloat16(average ? acc / divisor : acc);
  }
}

void reduce_fp32(std::span<const void* const> ins, float* out, size_t count, ReduceOp op) {
  if (op != ReduceOp::kMax) return sum_fp32(ins, out, count, op == ReduceOp::kAvg);
  alignas(64) float acc[kBlock];
  const size_t n = ins.size();
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t len = std::min(kBlock, count - start);
    combine_block(acc, nullptr, len, n, op,
                  [&](size_t k, float*) { return static_cast<const float*>(ins[k]) + start; });
    std::memcpy(out + start, acc, len * sizeof(float));
  }
}

template <typename T>
void reduce_low(std::span<const void* const> ins, T* out, size_t count, ReduceOp op) {
  alignas(64) float acc[kBlock];
  alignas(64) float tmp[kBlock];
  const size_t n = ins.size();
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t len = std::min(kBlock, count - start);
    combine_block(acc, tmp, len, n, op, [&](size_t k, float* dst) -> const float* {
      convert(std::span<const T>(static_cast<const T*>(ins[k]) + start, len), std::span<float>(dst, len));
      return dst;
    });
    convert(std::span<const float>(acc, len), std::span<T>(out + start, len));
  }
}

}  // namespace

void reduce_ordered(std::span<const void* const> ins, void* out, size_t count, Dtype dtype, ReduceOp op) {
  ZDP_CHECK(!ins.empty(), CommError, "[reduce] no contributions to reduce");
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32: return reduce_fp32(ins, static_cast<float*>(out), count, op);
    case Dtype::Kind::kFp16: return reduce_low(ins, static_cast<Half*>(out), count, op);
    case Dtype::Kind::kBf16:
      if (op != ReduceOp::kMax) return sum_bf16(ins, static_cast<BFloat16*>(out), count, op == ReduceOp::kAvg);
      return reduce_low(ins, static_cast<BFloat16*>(out), count, op);
  }
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
