// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules against values worked out by hand from DeepSpeed's
// WarmupLR / WarmupDecayLR / WarmupCosineLR formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "optim/lr_schedule.h"

namespace zerodp::optim {
namespace {

TEST(LrSchedule, Constant) {
  const LrSchedule s({.kind = LrScheduleKind::kConstant, .max_lr = 3e-4});
  EXPECT_EQ(s.lr_at(0), 3e-4);
  EXPECT_EQ(s.lr_at(123456), 3e-4);
}

TEST(LrSchedule, LinearWarmupThenConstant) {
  const LrSchedule s({.kind = LrScheduleKind::kWarmup, .max_lr = 1.0, .min_lr = 0.2, .warmup_steps = 4});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.4);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.8);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 1.0);
}

TEST(LrSchedule, LogWarmupAsDeepSpeed) {
  const LrSchedule s(
      {.kind = LrScheduleKind::kWarmup, .max_lr = 1.0, .warmup_steps = 10, .warmup_type = WarmupType::kLog});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(4), std::log(5.0) / std::log(10.0));
  EXPECT_DOUBLE_EQ(s.lr_at(9), 1.0);  // ln(10)/ln(10)
  EXPECT_DOUBLE_EQ(s.lr_at(10), 1.0);
}

TEST(LrSchedule, WarmupStepsBelowTwoAreTwo) {
  const LrSchedule s({.kind = LrScheduleKind::kWarmup, .max_lr = 1.0, .warmup_steps = 1});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(2), 1.0);
}

TEST(LrSchedule, WarmupThenLinearDecayToMin) {
  // W = 10, T = 110: decay gamma = (110 - t) / 100 from t = 10.
  const LrSchedule s({.kind = LrScheduleKind::kWarmupLinearDecay,
                      .max_lr = 1.0,
                      .min_lr = 0.0,
                      .warmup_steps = 10,
                      .total_steps = 110});
  EXPECT_DOUBLE_EQ(s.lr_at(5), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(60), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(109), 0.01);
  EXPECT_DOUBLE_EQ(s.lr_at(110), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(500), 0.0);
}

TEST(LrSchedule, WarmupThenCosine) {
  // W = 10, T = 110, ratios: warmup from 0.1, cosine down to 0.01.
  const LrScheduleConfig c{.kind = LrScheduleKind::kWarmupCosine,
                           .max_lr = 2.0,
                           .warmup_steps = 10,
                           .total_steps = 110,
                           .warmup_min_ratio = 0.1,
                           .cos_min_ratio = 0.01};
  const LrSchedule s(c);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 2.0 * 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(5), 2.0 * (0.1 + 0.5 * 0.9));
  // After warm-up: progress p = (t - 10 + 1) / 100.
  auto expected = [](double p) { return 2.0 * (0.01 + 0.99 * (1.0 + std::cos(std::numbers::pi * p)) / 2.0); };
  EXPECT_DOUBLE_EQ(s.lr_at(10), expected(0.01));
  EXPECT_DOUBLE_EQ(s.lr_at(59), expected(0.5));
  EXPECT_DOUBLE_EQ(s.lr_at(109), 2.0 * 0.01);
  EXPECT_DOUBLE_EQ(s.lr_at(5000), 2.0 * 0.01);  // clamped, no rise
  // Monotone non-increasing after the warm-up.
  for (int64_t t = 10; t < 120; ++t) EXPECT_LE(s.lr_at(t + 1), s.lr_at(t));
}

TEST(LrSchedule, ParsesNames) {
  // --help's spelling, and the underscores earlier versions used.
  EXPECT_EQ(parse_lr_schedule_kind("warmup-cosine"), LrScheduleKind::kWarmupCosine);
  EXPECT_EQ(parse_lr_schedule_kind("warmup-linear"), LrScheduleKind::kWarmupLinearDecay);
  EXPECT_EQ(lr_schedule_kind_name(LrScheduleKind::kWarmupCosine), "warmup-cosine");
  EXPECT_EQ(parse_lr_schedule_kind(lr_schedule_kind_name(LrScheduleKind::kWarmupLinearDecay)),
            LrScheduleKind::kWarmupLinearDecay);
  EXPECT_EQ(parse_lr_schedule_kind("warmup_cosine"), LrScheduleKind::kWarmupCosine);
  EXPECT_EQ(parse_lr_schedule_kind("warmup_linear"), LrScheduleKind::kWarmupLinearDecay);
  EXPECT_EQ(parse_lr_schedule_kind("warmup_decay"), LrScheduleKind::kWarmupLinearDecay);
  EXPECT_EQ(parse_lr_schedule_kind("constant"), LrScheduleKind::kConstant);
  EXPECT_EQ(parse_warmup_type("log"), WarmupType::kLog);
  EXPECT_THROW(parse_lr_schedule_kind("onecycle"), ConfigError);
  EXPECT_THROW(parse_warmup_type("exp"), ConfigError);
}

TEST(LrSchedule, RejectsBadConfigs) {
  EXPECT_THROW(LrSchedule({.max_lr = -1.0}), ConfigError);
  EXPECT_THROW(LrSchedule({.max_lr = 1.0, .min_lr = 2.0}), ConfigError);
  EXPECT_THROW(LrSchedule({.kind = LrScheduleKind::kWarmupCosine, .warmup_steps = 10}), ConfigError);
  EXPECT_THROW(LrSchedule({.kind = LrScheduleKind::kWarmup, .warmup_steps = 0}), ConfigError);
  EXPECT_THROW(
      LrSchedule({.kind = LrScheduleKind::kWarmupCosine, .warmup_steps = 1, .total_steps = 10, .cos_min_ratio = 1.5}),
      ConfigError);
  EXPECT_THROW(LrSchedule().lr_at(-1), ConfigError);
}

}  // namespace
}  // namespace zerodp::optim
