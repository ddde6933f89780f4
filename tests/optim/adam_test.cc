// SPDX-License-Identifier: Apache-2.0
// Adam/AdamW against an independent double-precision reference written from
// the textbook form (m_hat = m/(1-b1^t), v_hat = v/(1-b2^t),
// p -= lr*m_hat/(sqrt(v_hat)+eps)), plus the exact (bitwise) properties the
// engine relies on: SIMD path, shard cut and gradient dtype do not matter.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/convert.h"
#include "core/error.h"
#include "optim/adam.h"
#include "optim/optimizer.h"
#include "test_data.h"

namespace zerodp::optim {
namespace {

using testing::first_bit_difference;
using testing::random_vector;

// One element's Adam trajectory in double. decoupled: AdamW; else L2.
struct RefAdam {
  double p, m = 0.0, v = 0.0;
  void step(double g, int t, double lr, const AdamConfig& c, bool decoupled, bool decay) {
    const double wd = decay ? c.weight_decay : 0.0;
    if (decoupled) {
      p -= lr * wd * p;
    } else {
      g += wd * p;
    }
    m = c.beta1 * m + (1.0 - c.beta1) * g;
    v = c.beta2 * v + (1.0 - c.beta2) * g * g;
    const double m_hat = m / (1.0 - std::pow(c.beta1, t));
    const double v_hat = v / (1.0 - std::pow(c.beta2, t));
    p -= lr * m_hat / (std::sqrt(v_hat) + c.eps);
  }
};

void expect_close_to_reference(OptimizerKind kind, double weight_decay) {
  constexpr size_t kN = 777;
  constexpr int kSteps = 12;
  AdamConfig config{.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = weight_decay};
  const std::vector<ElementRange> no_decay = {{10, 50}, {700, 77}};
  auto in_no_decay = [&](size_t i) { return (i >= 10 && i < 60) || i >= 700; };

  std::vector<float> params = random_vector(kN, 1);
  std::vector<RefAdam> ref;
  for (float p : params) ref.push_back({p});
  auto opt = make_optimizer({.kind = kind, .adam = config}, kN, {.no_decay = no_decay});
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> grads = random_vector(kN, 100 + t, 0.1f);
    const double lr = 1e-2 * (1.0 - 0.05 * t);  // the schedule's lr, varying per step
    opt->step(params, grads, lr);
    for (size_t i = 0; i < kN; ++i) {
      ref[i].step(grads[i], t, lr, config, kind == OptimizerKind::kAdamW, !in_no_decay(i));
    }
  }
  EXPECT_EQ(opt->step_count(), kSteps);
  const auto state = opt->state();
  ASSERT_EQ(state.size(), 2u);
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(params[i], ref[i].p, 1e-6 + 1e-6 * std::abs(ref[i].p)) << "element " << i;
    ASSERT_NEAR(state[0].data[i], ref[i].m, 1e-7 + 1e-5 * std::abs(ref[i].m)) << "m at " << i;
    ASSERT_NEAR(state[1].data[i], ref[i].v, 1e-10 + 1e-5 * std::abs(ref[i].v)) << "v at " << i;
  }
}

TEST(Adam, AdamWMatchesDoubleReference) { expect_close_to_reference(OptimizerKind::kAdamW, 0.1); }
TEST(Adam, AdamL2MatchesDoubleReference) { expect_close_to_reference(OptimizerKind::kAdam, 0.1); }
TEST(Adam, NoWeightDecayMatchesDoubleReference) { expect_close_to_reference(OptimizerKind::kAdamW, 0.0); }

TEST(Adam, FirstStepMovesEachParameterByLrTimesSign) {
  // With m_hat = g and v_hat = g^2 on step 1 the update is lr*g/(|g|+eps).
  std::vector<float> params = {1.0f, -2.0f, 0.5f};
  const std::vector<float> grads = {0.3f, -0.02f, 4.0f};
  auto opt = make_optimizer({.kind = OptimizerKind::kAdam, .adam = {}}, 3);
  opt->step(params, grads, 0.01);
  EXPECT_NEAR(params[0], 0.99f, 1e-6);
  EXPECT_NEAR(params[1], -1.99f, 1e-6);
  EXPECT_NEAR(params[2], 0.49f, 1e-6);
}

TEST(Adam, NoDecayRangesSkipOnlyTheDecay) {
  // Zero gradients: Adam's update is 0/(0+eps) = 0, so only AdamW's decay
  // moves a parameter, and only outside the no-decay ranges.
  constexpr size_t kN = 100;
  std::vector<float> params(kN, 2.0f);
  const std::vector<float> grads(kN, 0.0f);
  auto opt = make_optimizer({.kind = OptimizerKind::kAdamW, .adam = {.weight_decay = 0.5}}, kN,
                            {.no_decay = {{20, 10}, {25, 10}, {90, 10}}});
  EXPECT_EQ(opt->no_decay(), (std::vector<ElementRange>{{20, 15}, {90, 10}}));
  opt->step(params, grads, 0.1);
  const float decayed = 2.0f * static_cast<float>(1.0 - 0.1 * 0.5);
  for (size_t i = 0; i < kN; ++i) {
    const bool exempt = (i >= 20 && i < 35) || i >= 90;
    EXPECT_EQ(params[i], exempt ? 2.0f : decayed) << "element " << i;
  }
}

// Runs `steps` AdamW steps over the whole vector, with the given level and
// shard cuts (each shard its own optimizer); returns params then m then v.
std::vector<float> run_sharded(const std::vector<size_t>& cuts, SimdLevel level, int steps, size_t n) {
  const std::vector<ElementRange> global_no_decay = {{3, 17}, {200, 1}, {250, 100}, {900, 123}};
  std::vector<float> params = random_vector(n, 7);
  std::vector<std::unique_ptr<Optimizer>> shards;
  std::vector<size_t> bounds = cuts;
  bounds.insert(bounds.begin(), 0);
  bounds.push_back(n);
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    const size_t size = bounds[s + 1] - bounds[s];
    shards.push_back(
        make_optimizer({.kind = OptimizerKind::kAdamW, .adam = {.weight_decay = 0.01}}, size,
                       {.no_decay = ranges_within_shard(global_no_decay, bounds[s], size), .simd = level}));
  }
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> grads = random_vector(n, 50 + t);
    for (size_t s = 0; s < shards.size(); ++s) {
      const size_t size = bounds[s + 1] - bounds[s];
      shards[s]->step(std::span<float>(params).subspan(bounds[s], size),
                      std::span<const float>(grads).subspan(bounds[s], size), 1e-3 * (t + 1), 0.5f);
    }
  }
  std::vector<float> out = params;
  for (int k = 0; k < 2; ++k) {
    for (auto& shard : shards) {
      const auto state = shard->state();
      out.insert(out.end(), state[k].data.begin(), state[k].data.end());
    }
  }
  return out;
}

TEST(Adam, EveryShardCutAndSimdLevelGivesTheSameBits) {
  constexpr size_t kN = 1031;  // prime: shards of every alignment and tail
  const std::vector<float> whole = run_sharded({}, SimdLevel::kScalar, 4, kN);
  for (SimdLevel level : supported_simd_levels()) {
    for (const std::vector<size_t>& cuts : testing::shard_cuts()) {
      SCOPED_TRACE(simd_level_name(level));
      EXPECT_EQ(first_bit_difference(run_sharded(cuts, level, 4, kN), whole), -1);
    }
  }
}

TEST(Adam, LowPrecisionGradientsEqualTheirFp32Widening) {
  testing::expect_low_precision_grads_equal_their_widening(
      {.kind = OptimizerKind::kAdamW, .adam = {.weight_decay = 0.1}});
}

TEST(Adam, GradScaleIsOneMultiplyPerElement) {
  // step(g, scale) equals step(g * scale) bit for bit.
  constexpr size_t kN = 333;
  const std::vector<float> grads = random_vector(kN, 11, 100.0f);
  std::vector<float> scaled = grads;
  for (float& g : scaled) g = g * 0.0078125f;
  std::vector<float> a = random_vector(kN, 12), b = a;
  auto opt_a = make_optimizer({.kind = OptimizerKind::kAdam, .adam = {.weight_decay = 0.01}}, kN);
  auto opt_b = make_optimizer({.kind = OptimizerKind::kAdam, .adam = {.weight_decay = 0.01}}, kN);
  for (int t = 0; t < 3; ++t) {
    opt_a->step(a, grads, 1e-3, 0.0078125f);
    opt_b->step(b, scaled, 1e-3);
  }
  EXPECT_EQ(first_bit_difference(a, b), -1);
}

TEST(Adam, SavedStateResumesBitwise) {
  constexpr size_t kN = 257;
  const OptimizerConfig config{.kind = OptimizerKind::kAdamW, .adam = {.weight_decay = 0.1}};
  std::vector<float> params = random_vector(kN, 21);
  auto first = make_optimizer(config, kN);
  for (int t = 0; t < 3; ++t) first->step(params, random_vector(kN, 30 + t), 1e-3);

  // Save: copy the state out, as a checkpoint would.
  std::vector<std::vector<float>> saved;
  for (const auto& s : std::as_const(*first).state()) saved.emplace_back(s.data.begin(), s.data.end());
  std::vector<float> resumed_params = params;
  auto resumed = make_optimizer(config, kN);
  const std::vector<std::span<const float>> views(saved.begin(), saved.end());
  resumed->load_state(first->step_count(), views);
  EXPECT_EQ(resumed->step_count(), 3);

  for (int t = 3; t < 6; ++t) {
    const std::vector<float> g = random_vector(kN, 30 + t);
    first->step(params, g, 1e-3);
    resumed->step(resumed_params, g, 1e-3);
  }
  EXPECT_EQ(first_bit_difference(params, resumed_params), -1);

  EXPECT_THROW(resumed->load_state(1, std::span<const std::span<const float>>(views.data(), 1)), ShapeError);
}

TEST(Adam, StateIsBookedWithTheAccountant) {
  std::set<StateKind> kinds;
  int64_t booked = 0;
  {
    auto opt = make_optimizer({.kind = OptimizerKind::kAdamW}, 1000, {.accountant = [&](StateKind kind, int64_t delta) {
                                kinds.insert(kind);
                                booked += delta;
                              }});
    EXPECT_EQ(booked, 8000);
    EXPECT_EQ(opt->state_bytes_per_param(), 8u);
  }
  EXPECT_EQ(booked, 0);
  EXPECT_EQ(kinds, (std::set<StateKind>{StateKind::kExpAvg, StateKind::kExpAvgSq}));
}

}  // namespace
}  // namespace zerodp::optim
