// SPDX-License-Identifier: Apache-2.0
// The model kernels' per-level loops (kernels/model_kernels.h): every SIMD
// level this CPU runs gives the scalar level's bits for GELU and SwiGLU
// (forward and backward) and softmax + cross-entropy (loss only and fused
// with its gradient), on lengths around the vector widths and inputs wide enough
// for the exp and tanh ranges to saturate; and the public kernels follow
// ZERODP_SIMD's level.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/simd.h"
#include "kernels/gelu.h"
#include "kernels/model_kernels.h"
#include "kernels/softmax_xent.h"
#include "support/same_bits.h"

namespace zerodp::kernels {
namespace {

std::vector<float> wide_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = d(gen);
  if (n > 2) {
    x[0] = 95.0f;  // past exp's clamp
    x[1] = -95.0f;
  }
  return x;
}

using ::zerodp::testing::same_bits;

TEST(ModelKernels, EveryLevelGivesTheScalarBitsForGelu) {
  const ModelKernelSet& ref = model_kernel_set(SimdLevel::kScalar);
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{4099}}) {
    const std::vector<float> x = wide_values(n, static_cast<uint32_t>(n), 4.0f);
    const std::vector<float> dy = wide_values(n, static_cast<uint32_t>(n) + 1, 1.0f);
    std::vector<float> y_ref(n), dx_ref(n);
    ref.gelu_forward(y_ref.data(), x.data(), n);
    ref.gelu_backward(dx_ref.data(), x.data(), dy.data(), n);
    for (SimdLevel level : supported_simd_levels()) {
      SCOPED_TRACE(fmt::format("{} n={}", simd_level_name(level), n));
      const ModelKernelSet& k = model_kernel_set(level);
      std::vector<float> y(n), dx(n);
      k.gelu_forward(y.data(), x.data(), n);
      k.gelu_backward(dx.data(), x.data(), dy.data(), n);
      EXPECT_TRUE(same_bits(y, y_ref));
      EXPECT_TRUE(same_bits(dx, dx_ref));
    }
  }
}

TEST(ModelKernels, EveryLevelGivesTheScalarBitsForSwiGlu) {
  const ModelKernelSet& ref = model_kernel_set(SimdLevel::kScalar);
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{4099}}) {
    const std::vector<float> g = wide_values(n, static_cast<uint32_t>(n), 6.0f);
    const std::vector<float> u = wide_values(n, static_cast<uint32_t>(n) + 1, 2.0f);
    const std::vector<float> dy = wide_values(n, static_cast<uint32_t>(n) + 2, 1.0f);
    std::vector<float> y_ref(n), dg_ref(n), du_ref(n);
    ref.swiglu_forward(y_ref.data(), g.data(), u.data(), n);
    ref.swiglu_backward(dg_ref.data(), du_ref.data(), dy.data(), g.data(), u.data(), n);
    for (SimdLevel level : supported_simd_levels()) {
      SCOPED_TRACE(fmt::format("{} n={}", simd_level_name(level), n));
      const ModelKernelSet& k = model_kernel_set(level);
      std::vector<float> y(n), dg(n), du(n);
      k.swiglu_forward(y.data(), g.data(), u.data(), n);
      k.swiglu_backward(dg.data(), du.data(), dy.data(), g.data(), u.data(), n);
      EXPECT_TRUE(same_bits(y, y_ref));
      EXPECT_TRUE(same_bits(dg, dg_ref));
      EXPECT_TRUE(same_bits(du, du_ref));
    }
  }
}

TEST(ModelKernels, EveryLevelGivesTheScalarBitsForSoftmaxCrossEntropy) {
  const ModelKernelSet& ref = model_kernel_set(SimdLevel::kScalar);
  struct Shape {
    size_t rows, vocab, padded;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 17, 32}, Shape{4, 256, 256}, Shape{5, 1000, 1024}}) {
    const std::vector<float> logits = wide_values(s.rows * s.padded, static_cast<uint32_t>(s.vocab), 6.0f);
    std::vector<int32_t> targets(s.rows);
    for (size_t i = 0; i < s.rows; ++i) targets[i] = static_cast<int32_t>((i * 7) % s.vocab);
    for (const bool grad : {false, true}) {
      auto run = [&](const ModelKernelSet& k, std::vector<float>& buf, std::vector<float>& losses) {
        buf = logits;
        losses.assign(s.rows, 0.0f);
        return (grad ? k.xent_rows_grad : k.xent_rows)(buf.data(), losses.data(), targets.data(), s.rows, s.vocab,
                                                       s.padded, 0.25f);
      };
      std::vector<float> buf_ref, losses_ref;
      const double total_ref = run(ref, buf_ref, losses_ref);
      for (SimdLevel level : supported_simd_levels()) {
        SCOPED_TRACE(fmt::format("{} rows={} V={} grad={}", simd_level_name(level), s.rows, s.vocab, grad));
        std::vector<float> buf, losses;
        const double total = run(model_kernel_set(level), buf, losses);
        EXPECT_EQ(std::bit_cast<uint64_t>(total), std::bit_cast<uint64_t>(total_ref));
        EXPECT_TRUE(same_bits(buf, buf_ref));
        EXPECT_TRUE(same_bits(losses, losses_ref));
      }
    }
  }
}

TEST(ModelKernels, PublicKernelsRunTheActiveLevel) {
  // Each level's table is its own on x86-64 (scalar elsewhere), and the
  // public kernels give the same bits whichever is active.
  const std::vector<float> x = wide_values(1000, 5, 3.0f);
  std::vector<float> ref(x.size());
  {
    ScopedSimdLevel forced(SimdLevel::kScalar);
    gelu_forward(ref, x);
  }
  for (SimdLevel level : supported_simd_levels()) {
    ScopedSimdLevel forced(level);
    if (level != SimdLevel::kScalar && level != SimdLevel::kNeon) {
      EXPECT_NE(&model_kernel_set(), &model_kernel_set(SimdLevel::kScalar)) << simd_level_name(level);
    }
    std::vector<float> y(x.size());
    gelu_forward(y, x);
    EXPECT_TRUE(same_bits(y, ref)) << simd_level_name(level);
  }
}

}  // namespace
}  // namespace zerodp::kernels
