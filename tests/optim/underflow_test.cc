// SPDX-License-Identifier: Apache-2.0
// The underflow lesson: fp16 has about three decimal digits, so adding a tiny
// update lr*g to an fp16 weight rounds straight back to the weight. Updating
// an fp32 master copy and rounding it to fp16 afterwards lets the tiny updates
// accumulate until they move the fp16 weight. This is why every mixed-
// precision run keeps fp32 master weights.
#include <gtest/gtest.h>

#include <vector>

#include "core/convert.h"
#include "core/dtype.h"
#include "optim/optimizer.h"

namespace zerodp::optim {
namespace {

constexpr size_t kN = 64;
constexpr int kSteps = 100;
constexpr double kLr = 1e-4;  // lr*g = 1e-4, below half an fp16 ulp at 1.0 (2^-11 ~ 4.9e-4)

TEST(UnderflowLesson, Fp16WeightsUpdatedDirectlyDoNotMove) {
  std::vector<Half> weights(kN, float_to_half(1.0f));
  for (int t = 0; t < kSteps; ++t) {
    for (Half& w : weights) w = float_to_half(half_to_float(w) - static_cast<float>(kLr) * 1.0f);
  }
  for (Half w : weights) EXPECT_EQ(half_to_float(w), 1.0f);
}

TEST(UnderflowLesson, Fp32MasterCopyAccumulatesAndMovesTheFp16Weights) {
  std::vector<Half> weights(kN, float_to_half(1.0f));
  std::vector<float> master(kN);
  convert(weights, std::span<float>(master));
  const std::vector<float> grads(kN, 1.0f);
  auto sgd = make_optimizer({.kind = OptimizerKind::kSgd, .sgd = {}}, kN);
  for (int t = 0; t < kSteps; ++t) {
    sgd->step(master, grads, kLr);
    convert(master, std::span<Half>(weights));  // refresh the fp16 copy from the master
  }
  // 100 steps of 1e-4: master ~ 0.99, which fp16 represents as 0.98974609375
  // or 0.990234375; either way the fp16 weight has moved.
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(master[i], 0.99f, 1e-5f);
    EXPECT_LT(half_to_float(weights[i]), 0.991f);
    EXPECT_GT(half_to_float(weights[i]), 0.989f);
  }
}

}  // namespace
}  // namespace zerodp::optim
