// SPDX-License-Identifier: Apache-2.0
// Adafactor against an independent double-precision reference written from
// the paper (Shazeer & Stern 2018, arXiv 1804.04235, Algorithms 4 and 5) with
// Hugging Face's defaults and options (relative step, parameter scale,
// warm-up init, update clipping, beta1, weight decay); factored (matrices,
// a batch of matrices) and unfactored (vectors, a one-row matrix) tensors;
// zero and non-finite gradients; the per-tensor statistics protocol over
// shard cuts (a unit cut into shards gives the bits of one optimizer holding
// the unit whole and summing the same cuts' partials); 16-bit gradients;
// the packed checkpoint form; the state sizes; the config checks.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>

#include "core/error.h"
#include "optim/adafactor.h"
#include "optim/optimizer.h"
#include "test_data.h"

namespace zerodp::optim::adafactor {
namespace {

using testing::first_bit_difference;
using testing::random_vector;

// A unit of four tensors: a 6 x 5 matrix, a 5-vector, a batch of 2 x (3 x 4)
// matrices and a 1 x 7 matrix (kept unfactored). 30 + 5 + 24 + 7 = 66.
std::vector<TensorShape> unit_tensors() {
  return {tensor_shape(0, std::array{6, 5}), tensor_shape(30, std::array{5}), tensor_shape(35, std::array{2, 3, 4}),
          tensor_shape(59, std::array{1, 7})};
}
constexpr size_t kUnit = 66;

// The algorithm in double, one tensor at a time.
struct RefTensor {
  TensorShape shape;
  std::vector<double> r, c, v, m;

  explicit RefTensor(const TensorShape& s) : shape(s) {
    if (s.factored()) {
      r.assign(s.batch * s.rows, 0.0);
      c.assign(s.batch * s.cols, 0.0);
    } else {
      v.assign(s.count, 0.0);
    }
    m.assign(s.count, 0.0);
  }

  // p and g: the tensor's elements.
  void step(std::span<double> p, std::span<const double> g, double t, double lr, const AdafactorConfig& cfg) {
    const size_t n = shape.count;
    double rho = lr;
    if (cfg.relative_step) rho = std::min(cfg.warmup_init ? 1e-6 * t : 1e-2, 1.0 / std::sqrt(t));
    double p2 = 0.0;
    for (double x : p) p2 += x * x;
    const double scale = cfg.scale_parameter ? std::max(cfg.eps2, std::sqrt(p2 / static_cast<double>(n))) : 1.0;
    const double lr_t = rho * scale;
    const double b2t = 1.0 - std::pow(t, cfg.decay_rate);
    std::vector<double> u(n);
    if (shape.factored()) {
      const size_t R = shape.rows, C = shape.cols;
      for (size_t b = 0; b < shape.batch; ++b) {
        for (size_t i = 0; i < R; ++i) {
          double s = 0.0;
          for (size_t j = 0; j < C; ++j) s += g[(b * R + i) * C + j] * g[(b * R + i) * C + j] + cfg.eps1;
          r[b * R + i] = b2t * r[b * R + i] + (1.0 - b2t) * s / static_cast<double>(C);
        }
        for (size_t j = 0; j < C; ++j) {
          double s = 0.0;
          for (size_t i = 0; i < R; ++i) s += g[(b * R + i) * C + j] * g[(b * R + i) * C + j] + cfg.eps1;
          c[b * C + j] = b2t * c[b * C + j] + (1.0 - b2t) * s / static_cast<double>(R);
        }
        double rmean = 0.0;
        for (size_t i = 0; i < R; ++i) rmean += r[b * R + i];
        rmean /= static_cast<double>(R);
        for (size_t i = 0; i < R; ++i) {
          for (size_t j = 0; j < C; ++j) {
            const size_t e = (b * R + i) * C + j;
            u[e] = g[e] / std::sqrt((r[b * R + i] / rmean) * c[b * C + j]);
          }
        }
      }
    } else {
      for (size_t e = 0; e < n; ++e) {
        v[e] = b2t * v[e] + (1.0 - b2t) * (g[e] * g[e] + cfg.eps1);
        u[e] = g[e] / std::sqrt(v[e]);
      }
    }
    double u2 = 0.0;
    for (double x : u) u2 += x * x;
    const double divisor = std::max(std::sqrt(u2 / static_cast<double>(n)) / cfg.clip_threshold, 1.0);
    for (size_t e = 0; e < n; ++e) {
      double d = u[e] / divisor * lr_t;
      if (cfg.beta1 > 0.0) {
        m[e] = cfg.beta1 * m[e] + (1.0 - cfg.beta1) * d;
        d = m[e];
      }
      p[e] = p[e] - cfg.weight_decay * lr_t * p[e] - d;
    }
  }
};

struct Case {
  const char* name;
  AdafactorConfig config;
  double lr;  // the step's lr (read without relative_step)
};

std::vector<Case> cases() {
  return {
      {"defaults", {}, 0.0},
      {"explicit_lr_no_scale", {.scale_parameter = false, .relative_step = false}, 1e-2},
      {"beta1_decay_clip", {.beta1 = 0.9, .clip_threshold = 0.5, .weight_decay = 0.1}, 0.0},
      {"warmup_init", {.warmup_init = true}, 0.0},
      {"decay_rate", {.decay_rate = -0.5, .scale_parameter = false}, 0.0},
  };
}

TEST(Adafactor, MatchesTheDoubleReferenceOnFactoredAndUnfactoredTensors) {
  const std::vector<TensorShape> tensors = unit_tensors();
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.name);
    std::vector<float> p = random_vector(kUnit, 1, 0.5f);
    std::vector<double> ref(p.begin(), p.end());
    std::vector<RefTensor> refs;
    for (const TensorShape& t : tensors) refs.emplace_back(t);
    auto opt = make_optimizer({.kind = OptimizerKind::kAdafactor, .adafactor = k.config}, kUnit, {.tensors = tensors});
    const float grad_scale = 0.5f;
    for (int t = 1; t <= 12; ++t) {
      // Gradients of varying size, one row of the first matrix much larger.
      std::vector<float> g = random_vector(kUnit, 100 + static_cast<uint32_t>(t), 2.0f);
      for (size_t j = 0; j < 5; ++j) g[5 + j] *= 30.0f;
      opt->step(p, g, k.lr, grad_scale);
      for (size_t i = 0; i < tensors.size(); ++i) {
        std::vector<double> gd(tensors[i].count);
        for (size_t e = 0; e < gd.size(); ++e) {
          gd[e] = static_cast<double>(g[tensors[i].offset + e] * grad_scale);
        }
        refs[i].step(std::span<double>(ref).subspan(tensors[i].offset, tensors[i].count), gd, t, k.lr, k.config);
      }
      for (size_t e = 0; e < kUnit; ++e) {
        // float's rounding: a few units of 2^-24 per step on |p| and on the
        // step's update (at most lr_t * clip_threshold in RMS).
        const double tol = 1e-6 * t * (std::abs(ref[e]) + 0.05);
        ASSERT_NEAR(p[e], ref[e], tol) << "step " << t << " element " << e;
      }
    }
    EXPECT_EQ(opt->step_count(), 12);
  }
}

TEST(Adafactor, KeepsTheFactoredStatisticsOfMatricesAndVOfTheRest) {
  const std::vector<TensorShape> tensors = unit_tensors();
  // 6x5 -> 6 + 5; the vector -> 5; 2x3x4 -> 2*3 + 2*4; 1x7 -> 7 (unfactored).
  EXPECT_EQ(adafactor_state_values(tensors, 0, kUnit), 11u + 5u + 14u + 7u);
  // A shard cutting the first matrix and the vector: all of the matrix, 3 of the vector.
  EXPECT_EQ(adafactor_state_values(tensors, 20, 13), 11u + 3u);
  EXPECT_EQ(adafactor_state_values(tensors, 62, 4), 4u);
  EXPECT_EQ(adafactor_state_values(tensors, 40, 0), 0u);
  // No shapes: one vector.
  EXPECT_EQ(adafactor_state_values({}, 7, 9), 9u);
  EXPECT_FALSE(tensor_shape(0, std::array{1, 7}).factored());
  EXPECT_FALSE(tensor_shape(0, std::array{7, 1}).factored());
  EXPECT_TRUE(tensor_shape(0, std::array{2, 2}).factored());
  const TensorShape batch = tensor_shape(3, std::array{2, 3, 4});
  EXPECT_EQ(batch.batch, 2u);
  EXPECT_EQ(batch.rows, 3u);
  EXPECT_EQ(batch.cols, 4u);

  auto opt = make_optimizer({.kind = OptimizerKind::kAdafactor}, 13, {.unit_offset = 20, .tensors = tensors});
  const auto state = opt->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].kind, StateKind::kExpAvgSqFactored);
  EXPECT_EQ(state[0].data.size(), 14u);
  EXPECT_EQ(state_kind_name(state[0].kind), "exp_avg_sq_factored");
  EXPECT_TRUE(is_second_moment(state[0].kind));
  EXPECT_EQ(opt->state_bytes_per_param(), 0u);
  auto with_m = make_optimizer({.kind = OptimizerKind::kAdafactor, .adafactor = {.beta1 = 0.9}}, 13,
                               {.unit_offset = 20, .tensors = tensors});
  ASSERT_EQ(with_m->state().size(), 2u);
  EXPECT_EQ(with_m->state()[0].kind, StateKind::kExpAvg);
  EXPECT_EQ(with_m->state_bytes_per_param(), 4u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kAdafactor}, true), 4u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kAdafactor}, false), 0u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kAdafactor, .adafactor = {.beta1 = 0.9}}, true), 8u);
  EXPECT_TRUE(optimizer_bytes_per_param({.kind = OptimizerKind::kAdafactor}, true).tensor_stats);
}

// Round 0: per tensor its squared-parameter sum and, for a matrix, its row
// and column sums; round 1: one value per tensor. The optimizer's own sizes
// are the free function's, which the plan uses.
TEST(Adafactor, StatisticsVectorsHaveThePlannedLengths) {
  const std::vector<TensorShape> tensors = unit_tensors();
  EXPECT_EQ(adafactor_stats_values(tensors, 0), (1u + 6u + 5u) + 1u + (1u + 2u * 3u + 2u * 4u) + 1u);
  EXPECT_EQ(adafactor_stats_values(tensors, 1), 4u);
  EXPECT_EQ(adafactor_stats_values({}, 0), 1u);
  EXPECT_EQ(adafactor_stats_values({}, 1), 1u);
  auto opt = make_optimizer({.kind = OptimizerKind::kAdafactor}, 13, {.unit_offset = 20, .tensors = tensors});
  EXPECT_EQ(opt->tensor_stats_size(0), adafactor_stats_values(tensors, 0));
  EXPECT_EQ(opt->tensor_stats_size(1), adafactor_stats_values(tensors, 1));
}

// The per-step factors (the statistics' size, not checkpointed) are booked
// with the statistics, and both are released with the optimizer.
TEST(Adafactor, BooksItsStatisticsAndTheirFactors) {
  int64_t m_bytes = 0, v_bytes = 0;
  {
    auto opt =
        make_optimizer({.kind = OptimizerKind::kAdafactor, .adafactor = {.beta1 = 0.9}}, 13,
                       {.accountant = [&](StateKind k, int64_t d) { (is_second_moment(k) ? v_bytes : m_bytes) += d; },
                        .unit_offset = 20,
                        .tensors = unit_tensors()});
    EXPECT_EQ(m_bytes, 13 * 4);
    EXPECT_EQ(v_bytes, 2 * 14 * 4);
    EXPECT_EQ(opt->booked_bytes(StateKind::kExpAvgSqFactored), 2u * 14u * 4u);
    EXPECT_EQ(opt->state().size(), 2u);  // the factors are not state
  }
  EXPECT_EQ(m_bytes, 0);
  EXPECT_EQ(v_bytes, 0);
}

// The engine's protocol, by hand: shards of the unit compute partials, the
// partials of the cuts are summed in rank order, each shard steps; a single
// optimizer over the whole unit computes every cut's partial, sums them the
// same way and steps. The same bits, at every cut.
TEST(Adafactor, ShardsSummingTheirPartialsGiveTheBitsOfTheWholeUnit) {
  const std::vector<TensorShape> tensors = unit_tensors();
  const std::vector<std::vector<size_t>> cuts = {{}, {33}, {22, 44}, {3, 31, 40, 60}, {0, 65}};
  const AdafactorConfig config{.beta1 = 0.9, .weight_decay = 0.01};
  for (const auto& cut : cuts) {
    std::vector<ElementRange> shards;
    size_t at = 0;
    for (size_t c : cut) {
      shards.push_back({at, c - at});
      at = c;
    }
    shards.push_back({at, kUnit - at});
    const OptimizerConfig oc{.kind = OptimizerKind::kAdafactor, .adafactor = config};
    auto whole = make_optimizer(oc, kUnit, {.tensors = tensors});
    std::vector<std::unique_ptr<Optimizer>> parts;
    for (const ElementRange& s : shards)
      parts.push_back(make_optimizer(oc, s.count, {.unit_offset = s.offset, .tensors = tensors}));
    std::vector<float> p_whole = random_vector(kUnit, 7, 0.3f), p_parts = p_whole;
    for (int t = 0; t < 4; ++t) {
      const std::vector<float> g = random_vector(kUnit, 50 + static_cast<uint32_t>(t));
      for (int round = 0; round < 2; ++round) {
        const size_t n = whole->tensor_stats_size(round);
        std::vector<float> sum_whole(n, 0.0f), sum_parts(n, 0.0f);
        for (size_t r = 0; r < shards.size(); ++r) {
          std::vector<float> a(n), b(n);
          std::vector<double> scratch(n);
          whole->tensor_stats(round, p_whole, std::span<const float>(g), 1.0f, shards[r], a, scratch);
          ASSERT_EQ(parts[r]->tensor_stats_size(round), n);
          parts[r]->tensor_stats(round, std::span<const float>(p_parts).subspan(shards[r].offset, shards[r].count),
                                 std::span<const float>(g).subspan(shards[r].offset, shards[r].count), 1.0f,
                                 {0, shards[r].count}, b, scratch);
          ASSERT_EQ(first_bit_difference(a, b), -1) << "round " << round << " shard " << r;
          for (size_t i = 0; i < n; ++i) sum_whole[i] = r == 0 ? a[i] : sum_whole[i] + a[i];
          for (size_t i = 0; i < n; ++i) sum_parts[i] = r == 0 ? b[i] : sum_parts[i] + b[i];
        }
        whole->set_tensor_stats(round, sum_whole);
        for (auto& o : parts) o->set_tensor_stats(round, sum_parts);
      }
      whole->step(p_whole, std::span<const float>(g), 0.0);
      for (size_t r = 0; r < shards.size(); ++r) {
        parts[r]->step(std::span<float>(p_parts).subspan(shards[r].offset, shards[r].count),
                       std::span<const float>(g).subspan(shards[r].offset, shards[r].count), 0.0);
      }
      ASSERT_EQ(first_bit_difference(p_whole, p_parts), -1) << "cut of " << cut.size() << " at step " << t;
    }
  }
}

TEST(Adafactor, AZeroGradientLeavesTheParametersAndANanOneSpreads) {
  const std::vector<TensorShape> tensors = unit_tensors();
  std::vector<float> p = random_vector(kUnit, 9);
  const std::vector<float> p0 = p;
  auto opt = make_optimizer({.kind = OptimizerKind::kAdafactor}, kUnit, {.tensors = tensors});
  const std::vector<float> zeros(kUnit, 0.0f);
  for (int t = 0; t < 3; ++t) opt->step(p, zeros, 0.0);
  EXPECT_EQ(first_bit_difference(p, p0), -1);
  const std::vector<StateTensor> state = opt->state();
  for (float x : state[0].data) EXPECT_TRUE(std::isfinite(x));

  std::vector<float> g = random_vector(kUnit, 10);
  g[2] = std::numeric_limits<float>::quiet_NaN();  // the 6x5 matrix's row 0
  g[31] = std::numeric_limits<float>::infinity();  // the vector
  opt->step(p, g, 0.0);
  for (size_t e = 0; e < 35; ++e) EXPECT_TRUE(std::isnan(p[e])) << e;  // the matrix and the vector (RMS(u))
  for (size_t e = 35; e < kUnit; ++e) EXPECT_TRUE(std::isfinite(p[e])) << e;
}

TEST(Adafactor, LowPrecisionGradientsGiveTheBitsOfTheirWidening) {
  testing::expect_low_precision_grads_equal_their_widening({.kind = OptimizerKind::kAdafactor});
  testing::expect_low_precision_grads_equal_their_widening(
      {.kind = OptimizerKind::kAdafactor, .adafactor = {.beta1 = 0.9, .weight_decay = 0.1}});
}

TEST(Adafactor, PackAndUnpackKeepTheStateAndTheSteps) {
  const std::vector<TensorShape> tensors = unit_tensors();
  const OptimizerConfig oc{.kind = OptimizerKind::kAdafactor};
  // A shard from inside the first matrix into the 2x3x4 batch.
  auto a = make_optimizer(oc, 20, {.unit_offset = 25, .tensors = tensors});
  auto& af = dynamic_cast<Adafactor&>(*a);
  // The view reaches back to the first matrix's statistics (0..11) and
  // forward to the batch's (35..49).
  EXPECT_EQ(af.packed_range(), (ElementRange{0, 49}));
  std::vector<float> p = random_vector(20, 11), g = random_vector(20, 12);
  a->step(p, g, 0.0);
  std::vector<float> packed(49);
  af.pack(packed);
  auto b = make_optimizer(oc, 20, {.unit_offset = 25, .tensors = tensors});
  dynamic_cast<Adafactor&>(*b).unpack(packed);
  b->set_step_count(1);
  std::vector<float> q = p;
  a->step(p, g, 0.0);
  b->step(q, g, 0.0);
  EXPECT_EQ(first_bit_difference(p, q), -1);
  EXPECT_EQ(first_bit_difference(a->state()[0].data, b->state()[0].data), -1);
  EXPECT_EQ(adafactor_packed_range(tensors, 40, 0).count, 0u);
  EXPECT_EQ(adafactor_packed_range(tensors, 30, 5), (ElementRange{30, 5}));
}

TEST(Adafactor, RefusesHuggingFacesInvalidCombinations) {
  auto make = [](AdafactorConfig c) { return make_optimizer({.kind = OptimizerKind::kAdafactor, .adafactor = c}, 4); };
  // The rate is step()'s argument (the run's schedule): zero::validate
  // refuses relative_step off with no rate, train the combination with an
  // explicit one.
  EXPECT_NO_THROW(make({.relative_step = false}));
  EXPECT_THROW(make({.relative_step = false, .warmup_init = true}), ConfigError);
  EXPECT_THROW(make({.beta1 = 1.0}), ConfigError);
  EXPECT_THROW(make({.clip_threshold = 0.0}), ConfigError);
  EXPECT_THROW(make({.decay_rate = 0.0}), ConfigError);
  EXPECT_THROW(make({.eps1 = -1.0}), ConfigError);
  EXPECT_EQ(parse_optimizer_kind("adafactor"), OptimizerKind::kAdafactor);
  EXPECT_EQ(optimizer_kind_name(OptimizerKind::kAdafactor), "adafactor");
  // Tensors out of order or not covering the shard.
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kAdafactor}, 10, {.tensors = {tensor_shape(0, std::array{4})}}),
               ShapeError);
}

}  // namespace
}  // namespace zerodp::optim::adafactor
