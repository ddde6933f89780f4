// SPDX-License-Identifier: Apache-2.0
#include "comm/reduce.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "comm/reduce_kernels.h"
#include "core/convert.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// Elements per block on the blocked paths: the fp32 accumulator stays in L1
// while the n inputs stream through once each.
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
// kMax combines left to right; kSum and kAvg in the pairwise order of
// reduce.h, with `partials` holding one block per level of the binary counter
// (reduce_vector.h's tree_sum, block-wise).
template <typename Load>
void combine_block(float* acc, float* tmp, std::vector<float>& partials, size_t len, size_t n, ReduceOp op,
                   Load&& load) {
  if (op == ReduceOp::kMax) {
    const float* first = load(0, acc);
    if (first != acc) std::memcpy(acc, first, len * sizeof(float));
    for (size_t k = 1; k < n; ++k) {
      const float* x = load(k, tmp);
      for (size_t j = 0; j < len; ++j) acc[j] = max_rule(acc[j], x[j]);
    }
  } else {
    // Before contribution k the counter holds one block per set bit of k,
    // largest first; k merges with as many as k has trailing one bits.
    size_t held = 0;
    for (size_t k = 0; k < n; ++k) {
      const float* x = load(k, tmp);
      held = static_cast<size_t>(std::popcount(k));
      const float* carry = x;
      for (int i = 0; i < std::countr_one(k); ++i) {
        float* left = partials.data() + (--held) * kBlock;
        for (size_t j = 0; j < len; ++j) left[j] = left[j] + carry[j];
        carry = left;
      }
      if (carry == x) std::memcpy(partials.data() + held * kBlock, x, len * sizeof(float));
      ++held;
    }
    float* total = partials.data() + (held - 1) * kBlock;
    for (size_t h = held - 1; h-- > 0;) {
      const float* left = partials.data() + h * kBlock;
      for (size_t j = 0; j < len; ++j) total[j] = left[j] + total[j];
    }
    std::memcpy(acc, total, len * sizeof(float));
  }
  if (op == ReduceOp::kAvg) {
    const float divisor = static_cast<float>(n);
    for (size_t j = 0; j < len; ++j) acc[j] = acc[j] / divisor;
  }
  if (op != ReduceOp::kMax) {
    for (size_t j = 0; j < len; ++j) acc[j] = acc[j] != acc[j] ? kCanonicalNan : acc[j];
  }
}

// The fused sum and the bulk copy of each SIMD level. The x86 levels' files
// exist only in x86-64 builds and the neon one only in aarch64 builds (CMake
// defines ZERODP_SIMD_X86_64 or ZERODP_SIMD_AARCH64).
const reduce_kernels::LevelKernels& kernels_for(SimdLevel level) {
  return *by_level<const reduce_kernels::LevelKernels*>(level, {
    {SimdLevel::kScalar, &reduce_kernels::kScalar},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, &reduce_kernels::kAvx2}, {SimdLevel::kAvx512, &reduce_kernels::kAvx512},
#endif
#if ZERODP_SIMD_AARCH64
        {SimdLevel::kNeon, &reduce_kernels::kNeon},
#endif
  });
}

reduce_kernels::DtypeBits bits_of(Dtype dtype) {
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32:
      return reduce_kernels::DtypeBits::kFp32;
    case Dtype::Kind::kBf16:
      return reduce_kernels::DtypeBits::kBf16;
    case Dtype::Kind::kFp16:
      return reduce_kernels::DtypeBits::kFp16;
  }
  return reduce_kernels::DtypeBits::kFp32;
}

// Everything else (kMax; fp16 without conversion hardware): blocks widened to fp32 in L1, combined,
// rounded once into a block of the dtype, then copied to every output.
template <typename T>
void reduce_blocked(std::span<const void* const> ins, std::span<void* const> outs, size_t count, ReduceOp op,
                    SimdLevel level) {
  alignas(64) float acc[kBlock];
  alignas(64) float tmp[kBlock];
  alignas(64) T rounded[kBlock];
  const size_t n = ins.size();
  // One block per level of the pairwise sum's counter (bit_width(n) levels).
  std::vector<float> partials(op == ReduceOp::kMax ? 0 : static_cast<size_t>(std::bit_width(n)) * kBlock);
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t len = std::min(kBlock, count - start);
    combine_block(acc, tmp, partials, len, n, op, [&](size_t k, float* dst) -> const float* {
      const T* src = static_cast<const T*>(ins[k]) + start;
      if constexpr (std::is_same_v<T, float>) {
        (void)dst;
        return src;
      } else {
        convert(std::span<const T>(src, len), std::span<float>(dst, len), level);
        return dst;
      }
    });
    if constexpr (std::is_same_v<T, float>) {
      for (void* o : outs) std::memcpy(static_cast<T*>(o) + start, acc, len * sizeof(T));
    } else {
      convert(std::span<const float>(acc, len), std::span<T>(rounded, len), level);
      for (void* o : outs) std::memcpy(static_cast<void*>(static_cast<T*>(o) + start), rounded, len * sizeof(T));
    }
  }
}

}  // namespace

void reduce_ordered_into_all(std::span<const void* const> ins, std::span<void* const> outs, size_t count, Dtype dtype,
                             ReduceOp op, SimdLevel level) {
  ZDP_CHECK(!ins.empty() && !outs.empty(), CommError, "[reduce] no contributions or no outputs");
  if (op != ReduceOp::kMax && kernels_for(level).sum(ins.data(), ins.size(), outs.data(), outs.size(), count,
                                                     bits_of(dtype), op == ReduceOp::kAvg)) {
    return;
  }
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32:
      return reduce_blocked<float>(ins, outs, count, op, level);
    case Dtype::Kind::kFp16:
      return reduce_blocked<Half>(ins, outs, count, op, level);
    case Dtype::Kind::kBf16:
      return reduce_blocked<BFloat16>(ins, outs, count, op, level);
  }
}

void copy_bytes(void* dst, const void* src, size_t bytes, SimdLevel level) { kernels_for(level).copy(dst, src, bytes); }

void reduce_ordered(std::span<const void* const> ins, void* out, size_t count, Dtype dtype, ReduceOp op,
                    SimdLevel level) {
  void* const outs[1] = {out};
  reduce_ordered_into_all(ins, outs, count, dtype, op, level);
}

double pairwise_sum(std::span<const double> values) {
  ZDP_CHECK(!values.empty(), CommError, "[reduce] no contributions to reduce");
  if (values.size() == 1) return values[0];
  // The largest power of two below the count, then the rest: reduce.h's order.
  const size_t prefix = std::bit_floor(values.size() - 1);
  return pairwise_sum(values.first(prefix)) + pairwise_sum(values.subspan(prefix));
}

double reduce_scalars(std::span<const double> values, ReduceOp op) {
  ZDP_CHECK(!values.empty(), CommError, "[reduce] no contributions to reduce");
  if (op == ReduceOp::kMax) {
    double acc = values[0];
    for (size_t k = 1; k < values.size(); ++k) acc = max_rule(acc, values[k]);
    return acc;
  }
  const double sum = pairwise_sum(values);
  return op == ReduceOp::kAvg ? sum / static_cast<double>(values.size()) : sum;
}

std::optional<uint64_t> reduce_uint64s(std::span<const uint64_t> values, ReduceOp op) {
  ZDP_CHECK(!values.empty(), CommError, "[reduce] no contributions to reduce");
  if (op == ReduceOp::kAvg) return std::nullopt;
  uint64_t acc = values[0];
  for (size_t k = 1; k < values.size(); ++k) {
    if (op == ReduceOp::kMax) {
      acc = std::max(acc, values[k]);
    } else if (__builtin_add_overflow(acc, values[k], &acc)) {
      return std::nullopt;
    }
  }
  return acc;
}

}  // namespace zerodp::comm
