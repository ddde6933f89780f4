// SPDX-License-Identifier: Apache-2.0
// The local ordered reduction against the scalar definition, on every fp16
// and bf16 bit pattern (NaNs, infinities, subnormals) and on fp32 edges, at
// every SIMD level: each level's vector code must give the scalar loop's
// bits, with NaN sums made canonical.
#include "comm/reduce.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "support/simd_levels.h"

namespace zerodp::comm {
namespace {

float widen(Half h) { return half_to_float(h); }
float widen(BFloat16 b) { return bfloat16_to_float(b); }
void narrow(float f, Half& h) { h = float_to_half(f); }
void narrow(float f, BFloat16& b) { b = float_to_bfloat16(f); }

// out = reduce of n inputs where input k holds pattern (i * (2k + 1) + k) mod 65536.
template <typename T>
void check_all_patterns(Dtype dtype) {
  constexpr size_t kCount = 65536;
  for (int n : {1, 2, 3}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      std::vector<std::vector<T>> inputs(static_cast<size_t>(n), std::vector<T>(kCount));
      std::vector<const void*> ptrs;
      for (int k = 0; k < n; ++k) {
        for (size_t i = 0; i < kCount; ++i) inputs[k][i].bits = static_cast<uint16_t>(i * (2 * k + 1) + k);
        ptrs.push_back(inputs[k].data());
      }
      std::vector<T> out(kCount);
      reduce_ordered(ptrs, out.data(), kCount, dtype, op);
      size_t mismatches = 0;
      for (size_t i = 0; i < kCount; ++i) {
        float acc = widen(inputs[0][i]);
        for (int k = 1; k < n; ++k) {
          const float x = widen(inputs[k][i]);
          if (op == ReduceOp::kMax) {
            acc = acc != acc ? acc : ((x > acc || x != x) ? x : acc);
          } else {
            acc = acc + x;
          }
        }
        if (op == ReduceOp::kAvg) acc = acc / static_cast<float>(n);
        if (op != ReduceOp::kMax && acc != acc) acc = std::bit_cast<float>(0x7FC00000u);  // canonical NaN
        T want;
        narrow(acc, want);
        if (want.bits != out[i].bits && mismatches++ == 0) {
          ADD_FAILURE() << dtype.name() << " n=" << n << " op " << reduce_op_name(op) << " element " << i << ": got 0x"
                        << std::hex << out[i].bits << ", want 0x" << want.bits;
        }
      }
      EXPECT_EQ(mismatches, 0u) << dtype.name() << " n=" << n << " op " << reduce_op_name(op);
    }
  }
}

class ReduceAtLevel : public zerodp::testing::AtEverySimdLevel {};
class CopyBytes : public zerodp::testing::AtEverySimdLevel {};

TEST_P(ReduceAtLevel, EveryFp16PatternMatchesTheScalarDefinition) { check_all_patterns<Half>(Dtype::fp16()); }

TEST_P(ReduceAtLevel, EveryBf16PatternMatchesTheScalarDefinition) { check_all_patterns<BFloat16>(Dtype::bf16()); }

TEST_P(ReduceAtLevel, Fp32EdgesMatchTheScalarLoopInPlace) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges = {0.0f,
                                    -0.0f,
                                    1.0f,
                                    -1.0f,
                                    1e-45f,
                                    -1e-45f,
                                    1.17549435e-38f,
                                    3.4028235e38f,
                                    -3.4028235e38f,
                                    inf,
                                    -inf,
                                    std::numeric_limits<float>::quiet_NaN(),
                                    0.1f,
                                    1e30f};
  std::vector<float> a, b, c;
  for (float x : edges) {
    for (float y : edges) {
      for (float z : {1.0f, -3.4028235e38f, inf}) {
        a.push_back(x);
        b.push_back(y);
        c.push_back(z);
      }
    }
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
    std::vector<float> out = b;  // in place over the second input
    const void* ins[] = {a.data(), out.data(), c.data()};
    reduce_ordered(ins, out.data(), out.size(), Dtype::fp32(), op);
    for (size_t i = 0; i < out.size(); ++i) {
      float want = (a[i] + b[i]) + c[i];
      if (op == ReduceOp::kAvg) want = want / 3.0f;
      if (want != want) want = std::bit_cast<float>(0x7FC00000u);
      EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "element " << i;
    }
  }
}

TEST_P(ReduceAtLevel, LargeOutputsTakeTheStreamingPathWithTheSameBits) {
  // 1.5M + 5 elements from an odd offset: over the streaming threshold, with
  // a head and a tail around the aligned middle; two outputs, one in place.
  constexpr size_t kCount = 1536 * 1024 + 5;
  std::vector<float> a(kCount + 1), b(kCount + 1), c(kCount + 1), other(kCount + 1);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 1000) * 0.001f;
    b[i] = static_cast<float>(i % 7) - 3.0f;
    c[i] = 1.0f / static_cast<float>(i + 1);
  }
  const std::vector<float> b0 = b;
  const void* ins[] = {a.data() + 1, b.data() + 1, c.data() + 1};
  void* outs[] = {b.data() + 1, other.data() + 1};
  reduce_ordered_into_all(ins, outs, kCount, Dtype::fp32(), ReduceOp::kAvg);
  size_t mismatches = 0;
  for (size_t i = 1; i <= kCount; ++i) {
    const float want = ((a[i] + b0[i]) + c[i]) / 3.0f;
    mismatches += std::bit_cast<uint32_t>(b[i]) != std::bit_cast<uint32_t>(want);
    mismatches += std::bit_cast<uint32_t>(other[i]) != std::bit_cast<uint32_t>(want);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(b[0], b0[0]);  // nothing written outside the range
}

TEST_P(CopyBytes, LargeAndSmallCopiesAreExact) {
  for (size_t bytes : {size_t{0}, size_t{63}, size_t{4096}, (size_t{5} << 20) + 37}) {
    std::vector<uint8_t> src(bytes + 3), dst(bytes + 3, 0xEE);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
    copy_bytes(dst.data() + 3, src.data() + 1, bytes);
    for (size_t i = 0; i < 3; ++i) ASSERT_EQ(dst[i], 0xEE);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(dst[i + 3], src[i + 1]) << "byte " << i << " of " << bytes;
  }
}

// Short counts (every tail length), odd offsets, several inputs and outputs:
// the same bits as the scalar level, for every dtype and op.
TEST_P(ReduceAtLevel, TailsOffsetsAndOutputsGiveTheScalarLevelsBits) {
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
    const size_t es = dtype.size();
    for (size_t count : {size_t{1}, size_t{7}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{100}}) {
      for (int n : {1, 2, 4}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
          std::vector<std::vector<uint8_t>> in(static_cast<size_t>(n), std::vector<uint8_t>((count + 1) * es));
          std::vector<const void*> ins;
          for (auto& v : in) {
            for (size_t b = 0; b + 1 < v.size(); b += 2) {
              // Finite values of modest size mostly, with a few specials.
              const uint32_t r = next();
              const uint16_t bits =
                  (r & 0xF0) == 0 ? static_cast<uint16_t>(r >> 16) : static_cast<uint16_t>((r >> 16) & 0x3BFF);
              v[b] = static_cast<uint8_t>(bits);
              v[b + 1] = static_cast<uint8_t>(bits >> 8);
            }
            ins.push_back(v.data() + es);  // an odd element offset
          }
          // Outputs at element offsets 0, 1 and 3; the result is read back from there.
          auto run = [&](SimdLevel level) {
            const size_t offsets[] = {0, 1, 3};
            std::vector<std::vector<uint8_t>> out(3, std::vector<uint8_t>((count + 3) * es));
            void* const outs[] = {out[0].data(), out[1].data() + es, out[2].data() + 3 * es};
            reduce_ordered_into_all(ins, outs, count, dtype, op, level);
            std::vector<std::vector<uint8_t>> result;
            for (size_t o = 0; o < 3; ++o) {
              const auto begin = out[o].begin() + static_cast<long>(offsets[o] * es);
              result.emplace_back(begin, begin + static_cast<long>(count * es));
            }
            return result;
          };
          const auto want = run(SimdLevel::kScalar);
          const auto got = run(GetParam());
          ASSERT_EQ(want, got) << dtype.name() << " count " << count << " n " << n << " op " << reduce_op_name(op);
        }
      }
    }
  }
}

INSTANTIATE_AT_EVERY_SIMD_LEVEL(ReduceAtLevel);
INSTANTIATE_AT_EVERY_SIMD_LEVEL(CopyBytes);

}  // namespace
}  // namespace zerodp::comm
