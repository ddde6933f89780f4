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

void reduce_fp32(std::span<const void* const> ins, float* out, size_t count, ReduceOp op) {
  alignas(64) float acc[kBlock];
  const size_t n = ins.size();
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t len = std::min(kBlock, count - start);
    // Two inputs summed in one pass: the common N=2 case reads each input once
    // and writes the accumulator once.
    if (n >= 2 && op != ReduceOp::kMax) {
      const float* a = static_cast<const float*>(ins[0]) + start;
      const float* b = static_cast<const float*>(ins[1]) + start;
      for (size_t j = 0; j < len; ++j) acc[j] = a[j] + b[j];
      for (size_t k = 2; k < n; ++k) {
        const float* x = static_cast<const float*>(ins[k]) + start;
        for (size_t j = 0; j < len; ++j) acc[j] += x[j];
      }
      if (op == ReduceOp::kAvg) {
        const float divisor = static_cast<float>(n);
        for (size_t j = 0; j < len; ++j) acc[j] = acc[j] / divisor;
      }
    } else {
      combine_block(acc, nullptr, len, n, op,
                    [&](size_t k, float*) { return static_cast<const float*>(ins[k]) + start; });
    }
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
    case Dtype::Kind::kBf16: return reduce_low(ins, static_cast<BFloat16*>(out), count, op);
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
