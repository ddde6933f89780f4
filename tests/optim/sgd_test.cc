// SPDX-License-Identifier: Apache-2.0
// SGD with momentum against a double-precision reference of PyTorch's rules
// (buffer = g on the first step, then momentum*buffer + g; nesterov
// g + momentum*buffer; L2 decay into the gradient).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
#include "test_data.h"

namespace zerodp::optim {
namespace {

using testing::first_bit_difference;
using testing::random_vector;

void expect_close_to_reference(const SgdConfig& config) {
  constexpr size_t kN = 501;
  constexpr int kSteps = 10;
  std::vector<float> params = random_vector(kN, 1);
  std::vector<double> ref_p(params.begin(), params.end()), ref_buf(kN, 0.0);
  auto opt = make_optimizer({.kind = OptimizerKind::kSgd, .sgd = config}, kN, {.no_decay = {{0, 100}}});
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> grads = random_vector(kN, 100 + t, 0.5f);
    const double lr = config.lr / t;
    opt->step(params, grads, lr);
    for (size_t i = 0; i < kN; ++i) {
      double d = grads[i];
      if (i >= 100) d += config.weight_decay * ref_p[i];
      if (config.momentum > 0.0) {
        ref_buf[i] = t == 1 ? d : config.momentum * ref_buf[i] + d;
        d = config.nesterov ? d + config.momentum * ref_buf[i] : ref_buf[i];
      }
      ref_p[i] -= lr * d;
    }
  }
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(params[i], ref_p[i], 1e-6 + 1e-6 * std::abs(ref_p[i])) << "element " << i;
  }
}

TEST(Sgd, PlainMatchesReference) { expect_close_to_reference({.lr = 0.1}); }
TEST(Sgd, MomentumMatchesReference) { expect_close_to_reference({.lr = 0.1, .momentum = 0.9}); }
TEST(Sgd, NesterovWithDecayMatchesReference) {
  expect_close_to_reference({.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
}
TEST(Sgd, MomentumWithDecayMatchesReference) {
  expect_close_to_reference({.lr = 0.05, .momentum = 0.5, .weight_decay = 0.1});
}

TEST(Sgd, FirstStepCopiesTheGradientIntoTheBuffer) {
  std::vector<float> params = {1.0f, 1.0f};
  const std::vector<float> grads = {0.5f, -0.25f};
  Sgd opt({.lr = 0.1, .momentum = 0.9}, 2);
  opt.step(params, grads, 0.1);
  EXPECT_EQ(opt.momentum_buffer()[0], 0.5f);
  EXPECT_EQ(opt.momentum_buffer()[1], -0.25f);
  opt.step(params, grads, 0.1);
  EXPECT_EQ(opt.momentum_buffer()[0], 0.5f * 0.9f + 0.5f);
}

TEST(Sgd, PlainSgdHoldsNoState) {
  Sgd opt({.lr = 0.1}, 10);
  EXPECT_TRUE(opt.state().empty());
  EXPECT_TRUE(opt.momentum_buffer().empty());
  EXPECT_EQ(opt.state_bytes_per_param(), 0u);
}

TEST(Sgd, SimdLevelsAndShardCutsGiveTheSameBits) {
  constexpr size_t kN = 1031;
  auto run = [&](SimdLevel level, size_t cut, bool nesterov) {
    std::vector<float> params = random_vector(kN, 5);
    const SgdConfig config{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = nesterov};
    const std::vector<ElementRange> no_decay = {{500, 40}};
    Sgd a(config, cut, {.no_decay = ranges_within_shard(no_decay, 0, cut), .simd = level});
    Sgd b(config, kN - cut, {.no_decay = ranges_within_shard(no_decay, cut, kN - cut), .simd = level});
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> g = random_vector(kN, 9 + t);
      a.step(std::span<float>(params).first(cut), std::span<const float>(g).first(cut), 0.1, 2.0f);
      b.step(std::span<float>(params).subspan(cut), std::span<const float>(g).subspan(cut), 0.1, 2.0f);
    }
    return params;
  };
  for (bool nesterov : {false, true}) {
    const std::vector<float> reference = run(SimdLevel::kScalar, kN, nesterov);
    for (SimdLevel level : supported_simd_levels()) {
      for (size_t cut : {size_t{kN}, size_t{1}, size_t{520}, size_t{1030}}) {
        SCOPED_TRACE(simd_level_name(level));
        EXPECT_EQ(first_bit_difference(run(level, cut, nesterov), reference), -1) << "cut " << cut;
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::optim
