// SPDX-License-Identifier: Apache-2.0
// core/clock.h: the names, and that the thread's CPU clock advances with
// work on this thread and not while it sleeps (what makes a one-thread
// benchmark on it independent of other processes' load).
#include "core/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace zerodp {
namespace {

TEST(Clock, NamesRoundTrip) {
  for (ClockKind k : {ClockKind::kWall, ClockKind::kThreadCpu}) EXPECT_EQ(parse_clock_kind(clock_name(k)), k);
  EXPECT_EQ(clock_name(ClockKind::kThreadCpu), "cpu");
  EXPECT_FALSE(parse_clock_kind("CPU").has_value());
  EXPECT_FALSE(parse_clock_kind("thread").has_value());
  EXPECT_FALSE(parse_clock_kind("").has_value());
}

TEST(Clock, TheThreadsCpuTimeStandsStillWhileItSleeps) {
  const double wall0 = clock_seconds(ClockKind::kWall), cpu0 = clock_seconds(ClockKind::kThreadCpu);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double wall = clock_seconds(ClockKind::kWall) - wall0, cpu = clock_seconds(ClockKind::kThreadCpu) - cpu0;
  EXPECT_GE(wall, 0.2);
  // A sleeping thread runs for microseconds (the two syscalls), not for the
  // 200 ms it sleeps, however loaded the machine is.
  EXPECT_LT(cpu, 0.1) << "wall " << wall;
}

TEST(Clock, TheThreadsCpuTimeAdvancesWithItsWork) {
  const double cpu0 = clock_seconds(ClockKind::kThreadCpu);
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1e-9 * i;
  EXPECT_GT(clock_seconds(ClockKind::kThreadCpu), cpu0);
  EXPECT_GT(x, 0);
}

}  // namespace
}  // namespace zerodp
