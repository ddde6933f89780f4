// The local ordered reduction against the scalar definition, on every fp16
// and bf16 bit pattern (NaNs, infinities, subnormals) and on fp32 edges: the
// vectorised paths must give the scalar loop's bits.
#include "comm/reduce.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

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
        T want;
        narrow(acc, want);
        if (want.bits != out[i].bits && mismatches++ == 0) {
          ADD_FAILURE() << dtype.name() << " n=" << n << " op " << reduce_op_name(op) << " element " << i
                        << ": got 0x" << std::hex << out[i].bits << ", want 0x" << want.bits;
        }
      }
      EXPECT_EQ(mismatches, 0u) << dtype.name() << " n=" << n << " op " << reduce_op_name(op);
    }
  }
}

TEST(ReduceOrdered, EveryFp16PatternMatchesTheScalarDefinition) { check_all_patterns<Half>(Dtype::fp16()); }

TEST(ReduceOrdered, EveryBf16PatternMatchesTheScalarDefinition) { check_all_patterns<BFloat16>(Dtype::bf16()); }

TEST(ReduceOrdered, Fp32EdgesMatchTheScalarLoopInPlace) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges = {0.0f, -0.0f, 1.0f, -1.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 3.4028235e38f,
                                    -3.4028235e38f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.1f, 1e30f};
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
      EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace zerodp::comm
