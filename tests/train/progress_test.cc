// SPDX-License-Identifier: Apache-2.0
// The progress line (train/progress.h) after a resume: the ETA timed over
// the steps this run took, not its rate spread over the steps before the
// resume, and the first plain line at the resume's first step.
#include "train/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace zerodp::train {
namespace {

TEST(Progress, EtaIsTheRateOfThisRunsSteps) {
  // 100 steps in 10 s from the start: 2300 left at 0.1 s each.
  EXPECT_DOUBLE_EQ(eta_seconds(10.0, 0, 100, 2400), 230.0);
  // Resumed at step 800: 100 steps in 10 s, 1500 left (not 10 / 900 a step).
  EXPECT_DOUBLE_EQ(eta_seconds(10.0, 800, 900, 2400), 150.0);
  // Nothing timed yet, or the last step: no estimate, nothing left.
  EXPECT_DOUBLE_EQ(eta_seconds(3.0, 800, 800, 2400), 0.0);
  EXPECT_DOUBLE_EQ(eta_seconds(3.0, 0, 0, 2400), 0.0);
  EXPECT_DOUBLE_EQ(eta_seconds(10.0, 800, 2400, 2400), 0.0);
}

// Off a terminal, a line at the run's first step: after a resume, the
// resume's first, not step 1.
TEST(Progress, PlainLinesStartAtTheRunsFirstStep) {
  Progress p(300, 100, false);
  p.start_at(200);
  testing::internal::CaptureStdout();
  p.update({.step = 201, .total = 300, .loss = 1.5});
  p.update({.step = 202, .total = 300, .loss = 1.4});
  p.update({.step = 300, .total = 300, .loss = 1.2});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("step 201/300 | loss 1.5000"), std::string::npos) << out;
  EXPECT_EQ(out.find("step 202/300"), std::string::npos) << out;
  EXPECT_NE(out.find("step 300/300 | loss 1.2000"), std::string::npos) << out;
}

}  // namespace
}  // namespace zerodp::train
