// SPDX-License-Identifier: Apache-2.0
// The dynamic loss scaler follows DeepSpeed's rules step by step, fails
// clearly when stuck at the floor, and round-trips its state.
#include <gtest/gtest.h>

#include "core/error.h"
#include "optim/loss_scaler.h"

namespace zerodp::optim {
namespace {

TEST(LossScaler, DeepSpeedDefaults) {
  const LossScalerConfig c;
  EXPECT_EQ(c.initial_scale, 65536.0);
  EXPECT_EQ(c.window, 1000);
  EXPECT_EQ(c.hysteresis, 2);
  EXPECT_EQ(c.min_scale, 1.0);
  LossScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_TRUE(s.dynamic());
}

TEST(LossScaler, DoublesAfterExactlyWindowCleanSteps) {
  LossScaler s({.window = 1000});
  for (int i = 0; i < 999; ++i) EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(false);  // the 1000th clean step
  EXPECT_EQ(s.scale(), 131072.0);
  for (int i = 0; i < 999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 131072.0);
  s.update(false);
  EXPECT_EQ(s.scale(), 262144.0);
}

TEST(LossScaler, HysteresisDelaysTheFirstHalving) {
  LossScaler s({.initial_scale = 1024.0, .window = 4});
  EXPECT_TRUE(s.update(true));  // hysteresis 2 -> 1, scale kept
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_EQ(s.state().hysteresis_left, 1);
  EXPECT_TRUE(s.update(true));  // now halves
  EXPECT_EQ(s.scale(), 512.0);
  // Hysteresis is not refilled by clean steps (consecutive_hysteresis off):
  s.update(false);
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 256.0);
  // ... but it is when the scale doubles after a window of clean steps.
  for (int i = 0; i < 4; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.state().hysteresis_left, 2);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.state().total_overflows, 4);
}

TEST(LossScaler, ConsecutiveHysteresisRefillsOnEveryCleanStep) {
  LossScaler s({.initial_scale = 1024.0, .window = 100, .consecutive_hysteresis = true});
  s.update(true);
  s.update(false);
  s.update(true);
  EXPECT_EQ(s.scale(), 1024.0);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0);
}

TEST(LossScaler, WindowRestartsAfterAnOverflow) {
  LossScaler s({.initial_scale = 8.0, .window = 3, .hysteresis = 1});
  s.update(false);
  s.update(false);
  s.update(true);  // halves to 4; the window counts from here
  EXPECT_EQ(s.scale(), 4.0);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 4.0);
  s.update(false);
  EXPECT_EQ(s.scale(), 8.0);
}

TEST(LossScaler, StuckAtTheMinimumFailsWithAClearError) {
  LossScaler s({.initial_scale = 4.0, .window = 1000, .hysteresis = 1, .min_scale = 1.0, .floor_patience = 2});
  s.update(true);  // 2
  s.update(true);  // 1
  EXPECT_EQ(s.scale(), 1.0);
  s.update(true);  // at the floor: 1 of 2 tolerated
  s.update(true);  // 2 of 2
  const LossScalerState before = s.state();
  try {
    s.update(true);
    FAIL() << "expected an error";
  } catch (const ConfigError&) {
    FAIL() << "not a config error: the run itself is stuck";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("[loss_scaler] gradients overflow at the minimum loss scale 1"), std::string::npos)
        << e.message();
  }
  EXPECT_EQ(s.state(), before);
}

TEST(LossScaler, CleanStepResetsThePatience) {
  LossScaler s({.initial_scale = 1.0, .hysteresis = 1, .floor_patience = 1});
  for (int i = 0; i < 10; ++i) {
    s.update(true);
    s.update(false);
  }
  EXPECT_EQ(s.state().total_overflows, 10);
  s.update(true);
  EXPECT_THROW(s.update(true), Error);
}

TEST(LossScaler, DeepSpeedDefaultPatienceFailsOnTheFirstOverflowAtTheFloor) {
  LossScaler s({.initial_scale = 2.0, .hysteresis = 1});
  s.update(true);
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_THROW(s.update(true), Error);
}

TEST(LossScaler, StaticScaleNeverChanges) {
  LossScaler s({.mode = LossScaleMode::kStatic, .initial_scale = 128.0, .floor_patience = 3});
  for (int i = 0; i < 5000; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 128.0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 128.0);
  EXPECT_THROW(s.update(true), Error);
}

TEST(LossScaler, StateRoundTrips) {
  LossScaler a({.initial_scale = 1024.0, .window = 5});
  for (bool o : {false, true, false, false, true, true, false}) a.update(o);
  LossScaler b({.initial_scale = 1024.0, .window = 5});
  b.load_state(a.state());
  for (bool o : {false, false, false, false, false, true, false, true}) {
    a.update(o);
    b.update(o);
    EXPECT_EQ(a.state(), b.state());
  }
  LossScalerState bad = a.state();
  bad.scale = 0.0;
  EXPECT_THROW(b.load_state(bad), ConfigError);
}

TEST(LossScaler, RejectsBadConfigs) {
  EXPECT_THROW(LossScaler({.initial_scale = 0.0}), ConfigError);
  EXPECT_THROW(LossScaler({.window = 0}), ConfigError);
  EXPECT_THROW(LossScaler({.hysteresis = 0}), ConfigError);
  EXPECT_THROW(LossScaler({.initial_scale = 1.0, .min_scale = 2.0}), ConfigError);
  EXPECT_THROW(LossScaler({.floor_patience = -1}), ConfigError);
}

}  // namespace
}  // namespace zerodp::optim
