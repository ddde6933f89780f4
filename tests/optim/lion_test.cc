// SPDX-License-Identifier: Apache-2.0
// Lion against an independent double-precision reference written from the
// paper's Algorithm 2 (Chen et al. 2023, arXiv 2302.06675):
//   c = b1*m + (1-b1)*g;  p = p - lr*(sign(c) + wd*p);  m = b2*m + (1-b2)*g
// with its exact cases (sign(0) = 0, the decoupled decay, the first step),
// non-finite gradients, and the bitwise properties the engine relies on:
// SIMD level, shard cut, gradient dtype and a save/load do not matter.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include "core/convert.h"
#include "core/error.h"
#include "optim/lion.h"
#include "optim/optimizer.h"
#include "test_data.h"

namespace zerodp::optim::lion {
namespace {

using testing::first_bit_difference;
using testing::random_vector;

constexpr double kUnit = 0x1p-24;  // float's unit roundoff

// One element's Lion trajectory in double, with first-order bounds on how far
// the float implementation can be from it (see the test below).
struct RefLion {
  double p, m = 0.0;
  double p_err = 0.0, m_err = 0.0;  // bounds on |float - double|
  bool ambiguous = false;           // some step's c lay within its rounding bound of 0

  void step(double g, double lr, const LionConfig& c, bool decay) {
    const double wd = decay ? c.weight_decay : 0.0;
    const double cc = c.beta1 * m + (1.0 - c.beta1) * g;
    // float's c: b1, 1-b1 rounded once each (2u), two products and a sum
    // (3u), on top of m's error scaled by b1.
    const double c_err = c.beta1 * m_err + 5.0 * kUnit * (c.beta1 * std::abs(m) + (1.0 - c.beta1) * std::abs(g));
    if (std::abs(cc) <= c_err) ambiguous = true;
    const double sign = cc > 0.0 ? 1.0 : (cc < 0.0 ? -1.0 : 0.0);
    const double p_new = p - lr * (sign + wd * p);
    // float's p: 1-lr*wd rounded (u) and the product p*(1-lr*wd) (u); -lr
    // rounded (u*lr), -lr*sign exact; the sum (u*|p_new|); the old error
    // scaled by 1-lr*wd <= 1.
    p_err = p_err + kUnit * (2.0 * std::abs(p) + lr + std::abs(p_new)) * 1.01;
    p = p_new;
    // float's m: b2, 1-b2 rounded (2u), two products and a sum (3u).
    m_err = c.beta2 * m_err + 5.0 * kUnit * (c.beta2 * std::abs(m) + (1.0 - c.beta2) * std::abs(g)) * 1.01;
    m = c.beta2 * m + (1.0 - c.beta2) * g;
  }
};

// Many steps against the reference, with weight decay, no-decay ranges, a
// varying lr and a grad_scale. Tolerances: the bounds RefLion accumulates
// (about 3u|p| + u*lr per step for p, a geometric sum of 5u-sized terms for
// m); they hold as long as float and double take the same sign at every step,
// which is asserted (no element's c comes within its rounding bound of 0 with
// these seeds), so the comparison is exact up to rounding, not "close".
void expect_close_to_reference(const LionConfig& config, double base_lr, int steps) {
  constexpr size_t kN = 777;
  const std::vector<ElementRange> no_decay = {{10, 50}, {700, 77}};
  auto in_no_decay = [&](size_t i) { return (i >= 10 && i < 60) || i >= 700; };
  std::vector<float> params = random_vector(kN, 1);
  std::vector<RefLion> ref;
  for (float p : params) ref.push_back({p});
  auto opt = make_optimizer({.kind = OptimizerKind::kLion, .lion = config}, kN, {.no_decay = no_decay});
  for (int t = 1; t <= steps; ++t) {
    std::vector<float> grads = random_vector(kN, 100 + t, 0.1f);
    const double lr = base_lr * (1.0 - 0.5 * t / steps);  // the schedule's lr, varying per step
    opt->step(params, grads, lr, 0.5f);                   // grad_scale 0.5: exact, so g = grads/2
    for (size_t i = 0; i < kN; ++i) ref[i].step(0.5 * grads[i], lr, config, !in_no_decay(i));
  }
  EXPECT_EQ(opt->step_count(), steps);
  const auto state = opt->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].kind, StateKind::kExpAvg);
  const std::vector<float> initial = random_vector(kN, 1);
  double worst_p = 0.0, moved = 0.0;
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_FALSE(ref[i].ambiguous) << "element " << i << ": pick another seed, c came too close to 0";
    ASSERT_LE(std::abs(params[i] - ref[i].p), ref[i].p_err) << "p at " << i;
    ASSERT_LE(std::abs(state[0].data[i] - ref[i].m), ref[i].m_err) << "m at " << i;
    worst_p = std::max(worst_p, std::abs(params[i] - ref[i].p));
    moved += std::abs(params[i] - initial[i]);
  }
  // The parameters moved by lr-sized steps, far beyond the rounding left.
  EXPECT_GT(moved, static_cast<double>(kN) * base_lr);
  EXPECT_LT(worst_p, 1e-5);
}

TEST(Lion, MatchesDoubleReferenceOver100Steps) {
  expect_close_to_reference({.beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.0}, 1e-3, 100);
}
TEST(Lion, WithWeightDecayMatchesDoubleReference) {
  expect_close_to_reference({.beta1 = 0.9, .beta2 = 0.99, .weight_decay = 1.0}, 1e-3, 100);
}
TEST(Lion, OtherBetasMatchDoubleReference) {
  expect_close_to_reference({.beta1 = 0.95, .beta2 = 0.98, .weight_decay = 0.1}, 3e-4, 60);
}

// bf16 momentum: the test's own rounding (the nearer of the two bf16
// neighbours, compared in double; a tie to the even one) and the float loop
// written out from the documented rule give the optimizer's bits.
uint16_t nearest_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t lo = bits & 0xFFFF0000u, hi = lo + 0x10000u;
  const double d_lo = std::abs(static_cast<double>(std::bit_cast<float>(lo)) - x);
  const double d_hi = std::abs(static_cast<double>(std::bit_cast<float>(hi)) - x);
  if (d_lo < d_hi) return static_cast<uint16_t>(lo >> 16);
  if (d_hi < d_lo) return static_cast<uint16_t>(hi >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1u) == 0 ? lo >> 16 : hi >> 16);
}

TEST(Lion, Bf16MomentumRoundsToNearestEvenAndKIsSix) {
  constexpr size_t kN = 531;
  const LionConfig config{.beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1, .bf16_momentum = true};
  std::vector<float> params = random_vector(kN, 21), ref_p = params;
  std::vector<uint16_t> ref_m(kN, 0);
  for (SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    std::vector<float> p = params;
    Lion opt(config, kN, {.no_decay = {{100, 31}}, .simd = level});
    std::vector<float> rp = params;
    std::vector<uint16_t> rm(kN, 0);
    for (int t = 1; t <= 20; ++t) {
      const std::vector<float> g = random_vector(kN, 300 + static_cast<uint32_t>(t), 0.1f);
      const double lr = 1e-3 * (1.0 + 0.1 * t);
      opt.step(p, g, lr, 0.5f);
      const float decay = static_cast<float>(1.0 - lr * config.weight_decay);
      const float b1 = 0.9f, omb1 = static_cast<float>(1.0 - 0.9), b2 = 0.99f, omb2 = static_cast<float>(1.0 - 0.99);
      const float neg_lr = static_cast<float>(-lr);
      for (size_t i = 0; i < kN; ++i) {
        const float m = std::bit_cast<float>(static_cast<uint32_t>(rm[i]) << 16);
        const float grad = g[i] * 0.5f;
        float param = rp[i];
        if (i < 100 || i >= 131) param = param * decay;
        const float c = m * b1 + omb1 * grad;
        const float sign = c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : 0.0f);
        rp[i] = param + neg_lr * sign;
        rm[i] = nearest_bf16(m * b2 + omb2 * grad);
      }
    }
    EXPECT_EQ(first_bit_difference(p, rp), -1);
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(opt.exp_avg_bf16(i)), static_cast<uint32_t>(rm[i]) << 16) << i;
    }
    EXPECT_EQ(opt.state_bytes_per_param(), 2u);
    EXPECT_EQ(opt.state()[0].kind, StateKind::kExpAvgBf16);
    EXPECT_EQ(opt.state()[0].codes.size(), 2 * kN);
  }
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kLion, .lion = config}, true), 6u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kLion, .lion = config}, false), 2u);
  // Ties: 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: to even (1).
  EXPECT_EQ(nearest_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * 0x1p-8f).bits, 0x3F82);
}

TEST(Lion, Bf16MomentumShardCutsAndLowPrecisionGradients) {
  const OptimizerConfig config{.kind = OptimizerKind::kLion, .lion = {.weight_decay = 0.1, .bf16_momentum = true}};
  constexpr size_t kN = 1031;
  auto run = [&](const std::vector<size_t>& cuts) {
    std::vector<float> p = random_vector(kN, 5);
    std::vector<size_t> edges = {0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(kN);
    for (size_t s = 0; s + 1 < edges.size(); ++s) {
      const size_t n = edges[s + 1] - edges[s];
      auto opt = make_optimizer(config, n);
      for (int t = 0; t < 6; ++t) {
        const std::vector<float> g = random_vector(kN, 70 + static_cast<uint32_t>(t), 0.1f);
        opt->step(std::span<float>(p).subspan(edges[s], n), std::span<const float>(g).subspan(edges[s], n), 1e-3);
      }
    }
    return p;
  };
  const std::vector<float> whole = run({});
  for (const std::vector<size_t>& cuts : testing::shard_cuts()) EXPECT_EQ(first_bit_difference(run(cuts), whole), -1);
  testing::expect_low_precision_grads_equal_their_widening(
      {.kind = OptimizerKind::kLion, .lion = {.bf16_momentum = true}});
}

// Stochastic rounding of the bf16 momentum: the random bits of an element
// depend on its flat index (ShardOptions::unit_flat_offset + unit_offset +
// i) and the step, so any cut of a unit, and the same elements at another
// unit offset, give the bits of the whole; each stored m is one of the two
// bf16 neighbours of the float m the step computed; and it differs from
// rounding to nearest.
TEST(Lion, Bf16MomentumStochasticRoundingIsTheSameAtEveryCut) {
  const OptimizerConfig config{
      .kind = OptimizerKind::kLion,
      .lion = {.weight_decay = 0.1, .bf16_momentum = true, .momentum_rounding = RoundingMode::kStochastic}};
  constexpr size_t kN = 1031;
  auto run = [&](const OptimizerConfig& c, const std::vector<size_t>& cuts, uint64_t unit_flat_offset) {
    std::vector<float> p = random_vector(kN, 5);
    std::vector<float> m(kN);
    std::vector<size_t> edges = {0};
    edges.insert(edges.end(), cuts.begin(), cuts.end());
    edges.push_back(kN);
    for (size_t s = 0; s + 1 < edges.size(); ++s) {
      const size_t n = edges[s + 1] - edges[s];
      auto opt = make_optimizer(c, n, {.unit_offset = edges[s], .unit_flat_offset = unit_flat_offset});
      for (int t = 0; t < 6; ++t) {
        const std::vector<float> g = random_vector(kN, 70 + static_cast<uint32_t>(t), 0.1f);
        opt->step(std::span<float>(p).subspan(edges[s], n), std::span<const float>(g).subspan(edges[s], n), 1e-3);
      }
      for (size_t i = 0; i < n; ++i) m[edges[s] + i] = static_cast<const Lion&>(*opt).exp_avg_bf16(i);
    }
    p.insert(p.end(), m.begin(), m.end());
    return p;
  };
  const std::vector<float> whole = run(config, {}, 4096);
  for (const std::vector<size_t>& cuts : testing::shard_cuts()) {
    EXPECT_EQ(first_bit_difference(run(config, cuts, 4096), whole), -1);
  }
  // Another unit draws other bits; rounding to nearest is another result.
  EXPECT_NE(first_bit_difference(run(config, {}, 0), whole), -1);
  OptimizerConfig nearest = config;
  nearest.lion.momentum_rounding = RoundingMode::kNearest;
  EXPECT_NE(first_bit_difference(run(nearest, {}, 4096), whole), -1);
  testing::expect_low_precision_grads_equal_their_widening(config);

  // One step from m = 0 with a gradient whose (1-b2)*g is not a bf16: m is
  // (1-b2)*g rounded down or up, each for some elements.
  Lion opt(config.lion, kN, {.unit_flat_offset = 77});
  std::vector<float> p(kN, 1.0f), g(kN, 0.3f);
  opt.step(p, g, 1e-3);
  const float m_new = static_cast<float>(1.0 - 0.99) * 0.3f;
  const float down = bfloat16_to_float(BFloat16{static_cast<uint16_t>(std::bit_cast<uint32_t>(m_new) >> 16)});
  const float up = bfloat16_to_float(BFloat16{static_cast<uint16_t>((std::bit_cast<uint32_t>(m_new) >> 16) + 1)});
  size_t ups = 0;
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_TRUE(opt.exp_avg_bf16(i) == down || opt.exp_avg_bf16(i) == up) << i;
    ups += opt.exp_avg_bf16(i) == up ? 1 : 0;
  }
  EXPECT_GT(ups, 0u);
  EXPECT_LT(ups, kN);
}

TEST(Lion, StochasticRoundingNeedsTheBf16Momentum) {
  EXPECT_THROW(validate({.kind = OptimizerKind::kLion, .lion = {.momentum_rounding = RoundingMode::kStochastic}}),
               ConfigError);
  EXPECT_NO_THROW(validate(
      {.kind = OptimizerKind::kLion, .lion = {.bf16_momentum = true, .momentum_rounding = RoundingMode::kStochastic}}));
  EXPECT_EQ(parse_rounding_mode("stochastic"), RoundingMode::kStochastic);
  EXPECT_EQ(parse_rounding_mode("nearest"), RoundingMode::kNearest);
  EXPECT_EQ(rounding_mode_name(RoundingMode::kStochastic), "stochastic");
  EXPECT_THROW(parse_rounding_mode("up"), ConfigError);
}

TEST(Lion, DefaultsAreThePapers) {
  const LionConfig c;
  EXPECT_EQ(c.beta1, 0.9);
  EXPECT_EQ(c.beta2, 0.99);
  EXPECT_EQ(c.weight_decay, 0.0);
}

TEST(Lion, FirstStepMovesEachParameterByExactlyLr) {
  // m = 0: c = (1-b1)*g has g's sign; lr = 0.25 and the parameters are exact
  // in float, so the result is exact too.
  std::vector<float> params = {1.0f, -2.0f, 0.5f, 3.0f};
  const std::vector<float> grads = {0.3f, -0.02f, 4.0f, -1e-30f};
  Lion opt({}, 4);
  opt.step(params, grads, 0.25);
  EXPECT_EQ(params, (std::vector<float>{0.75f, -1.75f, 0.25f, 3.25f}));
  const float one_minus_beta2 = static_cast<float>(1.0 - 0.99);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(opt.exp_avg()[i], one_minus_beta2 * grads[i]) << i;
}

TEST(Lion, SignOfZeroIsZero) {
  // c = 0 in three ways: zero gradient with zero momentum, a negative zero,
  // and an exact cancellation (b1 = 0.5: 0.5*1 + 0.5*(-1) = 0). The parameter
  // does not move (no decay) or only decays; the momentum still updates.
  const LionConfig config{.beta1 = 0.5, .beta2 = 0.5, .weight_decay = 0.0};
  for (SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    std::vector<float> params(40, 2.0f);  // more than a vector, with a tail
    std::vector<float> grads(40, 0.0f);
    grads[1] = -0.0f;
    Lion opt(config, 40, {.simd = level});
    opt.step(params, grads, 0.125);
    EXPECT_EQ(first_bit_difference(params, std::vector<float>(40, 2.0f)), -1);
    // Now m = 0 except element 5, set to 1 with a step of g = 2 on it alone.
    std::vector<float> g2(40, 0.0f);
    g2[5] = 2.0f;
    opt.step(params, g2, 0.125);
    EXPECT_EQ(opt.exp_avg()[5], 1.0f);
    EXPECT_EQ(params[5], 1.875f);
    // c = 0.5*1 + 0.5*(-1) = 0: no move, m = 0.5*1 + 0.5*(-1) = 0.
    std::vector<float> g3(40, 0.0f);
    g3[5] = -1.0f;
    opt.step(params, g3, 0.125);
    EXPECT_EQ(params[5], 1.875f);
    EXPECT_EQ(opt.exp_avg()[5], 0.0f);
    EXPECT_EQ(params[0], 2.0f);
  }
  // With decay, a zero c leaves only the decay: p * float(1 - lr*wd).
  std::vector<float> params(3, 2.0f);
  Lion decaying({.weight_decay = 0.5}, 3, {.no_decay = {{2, 1}}});
  decaying.step(params, std::vector<float>(3, 0.0f), 0.125);
  const float decayed = 2.0f * static_cast<float>(1.0 - 0.125 * 0.5);
  EXPECT_EQ(params, (std::vector<float>{decayed, decayed, 2.0f}));
}

TEST(Lion, WeightDecayIsTheDecoupledMultiplyBeforeTheSignStep) {
  // p = p*(1 - lr*wd) - lr*sign(c), the factor rounded to float once.
  const double lr = 0.01, wd = 0.3;
  std::vector<float> params = {1.5f, -0.7f};
  const std::vector<float> before = params;
  const std::vector<float> grads = {1.0f, 1.0f};
  Lion opt({.weight_decay = wd}, 2);
  opt.step(params, grads, lr);
  const float factor = static_cast<float>(1.0 - lr * wd);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(params[i], before[i] * factor + static_cast<float>(-lr)) << i;
}

TEST(Lion, NonFiniteGradientsMakeTheParameterNaNAtEveryLevel) {
  // As AdamW: a NaN or infinite gradient turns the parameter into NaN
  // (sign(NaN) and sign(inf - inf) are NaN here) instead of moving it by lr
  // or freezing it; its neighbours are untouched. The engine never passes
  // one (fp16 skips the step, fp32/bf16 stop), so this is the library's rule.
  constexpr size_t kN = 37;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> reference;
  for (SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    std::vector<float> params(kN, 1.0f);
    std::vector<float> grads(kN, 0.5f);
    grads[3] = nan;
    grads[20] = inf;
    grads[36] = -inf;
    Lion opt({.weight_decay = 0.1}, kN, {.simd = level});
    opt.step(params, grads, 0.125);
    for (size_t i : {size_t{3}, size_t{20}, size_t{36}}) EXPECT_TRUE(std::isnan(params[i])) << i;
    EXPECT_TRUE(std::isnan(opt.exp_avg()[3]));
    EXPECT_EQ(opt.exp_avg()[20], inf);  // m = 0.01 * inf
    EXPECT_EQ(params[4], 1.0f * static_cast<float>(1.0 - 0.125 * 0.1) - 0.125f);
    // An infinite momentum keeps the parameter NaN on later (finite) steps.
    std::vector<float> finite(kN, 0.5f);
    opt.step(params, finite, 0.125);
    EXPECT_TRUE(std::isnan(params[20]));
    std::vector<float> bits = params;
    bits.insert(bits.end(), opt.exp_avg().begin(), opt.exp_avg().end());
    if (reference.empty()) {
      reference = bits;
    } else {
      EXPECT_EQ(first_bit_difference(bits, reference), -1);  // NaN payloads included
    }
  }
}

// c = b1*m + (1-b1)*g is not stored, so a level that fused it into one
// multiply-add would differ only where the rounding decides c's sign. These
// pairs make the two rounded products cancel exactly (c = 0: no move) where
// the exact b1*m + float((1-b1)*g) is not 0, so such a level would move them.
TEST(Lion, ExactlyCancellingProductsGiveSignZeroAtEveryLevel) {
  const LionConfig config{.beta1 = 0.9, .beta2 = 0.99};
  const float b1 = static_cast<float>(config.beta1);
  const float omb1 = static_cast<float>(1.0 - config.beta1);
  std::vector<float> m, g;
  const std::vector<float> candidates = random_vector(4000, 77);
  for (float mi : candidates) {
    const float x = b1 * mi;
    if (static_cast<double>(b1) * mi == static_cast<double>(x)) continue;  // exact product: a fused form agrees
    // A g with float((1-b1)*g) == -x, searched around -x/(1-b1).
    float gi = -x / omb1;
    for (int k = 0; k < 8 && omb1 * gi != -x; ++k) gi = std::nextafter(gi, omb1 * gi > -x ? -1e30f : 1e30f);
    if (omb1 * gi != -x) continue;
    m.push_back(mi);
    g.push_back(gi);
  }
  ASSERT_GT(m.size(), 100u);
  const size_t n = m.size();
  std::vector<float> reference;
  for (SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    Lion opt(config, n, {.simd = level});
    const std::vector<std::span<const float>> state = {m};
    opt.load_state(5, state);
    std::vector<float> params(n, 1.0f);
    opt.step(params, g, 0.125);
    EXPECT_EQ(first_bit_difference(params, std::vector<float>(n, 1.0f)), -1) << "sign(0) moved a parameter";
    std::vector<float> bits = params;
    bits.insert(bits.end(), opt.exp_avg().begin(), opt.exp_avg().end());
    if (reference.empty()) {
      reference = bits;
    } else {
      EXPECT_EQ(first_bit_difference(bits, reference), -1);
    }
  }
}

// Runs `steps` Lion steps over the whole vector with the given level and
// shard cuts (each shard its own optimizer); returns params then m. A fifth
// of the gradients are exact zeros, so sign(0) runs on every path.
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
        make_optimizer({.kind = OptimizerKind::kLion, .lion = {.weight_decay = 0.1}}, size,
                       {.no_decay = ranges_within_shard(global_no_decay, bounds[s], size), .simd = level}));
  }
  for (int t = 0; t < steps; ++t) {
    std::vector<float> grads = random_vector(n, 50 + t);
    for (size_t i = t; i < n; i += 5) grads[i] = 0.0f;
    for (size_t s = 0; s < shards.size(); ++s) {
      const size_t size = bounds[s + 1] - bounds[s];
      shards[s]->step(std::span<float>(params).subspan(bounds[s], size),
                      std::span<const float>(grads).subspan(bounds[s], size), 1e-3 * (t + 1), 0.5f);
    }
  }
  std::vector<float> out = params;
  for (auto& shard : shards) {
    const auto state = shard->state();
    out.insert(out.end(), state[0].data.begin(), state[0].data.end());
  }
  return out;
}

TEST(Lion, EveryShardCutAndSimdLevelGivesTheSameBits) {
  constexpr size_t kN = 1031;  // prime: shards of every alignment and tail
  const std::vector<float> whole = run_sharded({}, SimdLevel::kScalar, 6, kN);
  for (SimdLevel level : supported_simd_levels()) {
    for (const std::vector<size_t>& cuts : testing::shard_cuts()) {
      SCOPED_TRACE(simd_level_name(level));
      EXPECT_EQ(first_bit_difference(run_sharded(cuts, level, 6, kN), whole), -1);
    }
  }
}

TEST(Lion, LowPrecisionGradientsEqualTheirFp32Widening) {
  testing::expect_low_precision_grads_equal_their_widening(
      {.kind = OptimizerKind::kLion, .lion = {.weight_decay = 0.1}});
}

TEST(Lion, SavedStateResumesBitwise) {
  constexpr size_t kN = 257;
  const OptimizerConfig config{.kind = OptimizerKind::kLion, .lion = {.weight_decay = 0.1}};
  std::vector<float> params = random_vector(kN, 21);
  auto first = make_optimizer(config, kN);
  for (int t = 0; t < 3; ++t) first->step(params, random_vector(kN, 30 + t), 1e-3);
  std::vector<std::vector<float>> saved;
  for (const auto& s : std::as_const(*first).state()) saved.emplace_back(s.data.begin(), s.data.end());
  ASSERT_EQ(saved.size(), 1u);
  std::vector<float> resumed_params = params;
  auto resumed = make_optimizer(config, kN);
  const std::vector<std::span<const float>> views(saved.begin(), saved.end());
  resumed->load_state(first->step_count(), views);
  for (int t = 3; t < 6; ++t) {
    const std::vector<float> g = random_vector(kN, 30 + t);
    first->step(params, g, 1e-3);
    resumed->step(resumed_params, g, 1e-3);
  }
  EXPECT_EQ(first_bit_difference(params, resumed_params), -1);
  EXPECT_THROW(resumed->load_state(1, {}), ShapeError);
}

TEST(Lion, StateIsOneMomentumBookedWithTheAccountant) {
  std::set<StateKind> kinds;
  int64_t booked = 0;
  {
    auto opt = make_optimizer({.kind = OptimizerKind::kLion}, 1000, {.accountant = [&](StateKind kind, int64_t delta) {
                                kinds.insert(kind);
                                booked += delta;
                              }});
    EXPECT_EQ(booked, 4000);
    EXPECT_EQ(opt->state_bytes_per_param(), 4u);
    EXPECT_EQ(opt->kind(), OptimizerKind::kLion);
    EXPECT_EQ(state_kind_name(opt->state()[0].kind), "exp_avg");
  }
  EXPECT_EQ(booked, 0);
  EXPECT_EQ(kinds, (std::set<StateKind>{StateKind::kExpAvg}));
}

}  // namespace
}  // namespace zerodp::optim::lion
