// SPDX-License-Identifier: Apache-2.0
// core/clock.h: the names, and that the thread's CPU clock advances with
// work on this thread and not while it sleeps (what makes a one-thread
// benchmark on it independent of other processes' load).
#include "core/clock.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

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

// Two threads held to one core, one of them at the lowest priority: the
// scheduler gives the core to the other nearly all the time, so the low
// one spends most of its wall time ready but off the core (runqueue time,
// far above its CPU time); a sleeping thread is not ready and counts none.
TEST(Clock, TheRunqueueTimeCountsTheTimeAnotherThreadHeldTheCore) {
  cpu_set_t allowed;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed), 0);
  int core = 0;
  while (core < CPU_SETSIZE && !CPU_ISSET(core, &allowed)) ++core;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(core, &one);
  const auto spin = [](double seconds) {
    const double start = clock_seconds(ClockKind::kWall);
    volatile double x = 0;
    while (clock_seconds(ClockKind::kWall) - start < seconds) x = x + 1.0;
  };
  double slept = -1, waited = -1, cpu = -1;
  std::thread low([&] {  // its own thread: a raised nice value cannot be lowered again
    const double s0 = thread_runqueue_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    slept = thread_runqueue_seconds() - s0;
    (void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
    const double w0 = thread_runqueue_seconds(), c0 = clock_seconds(ClockKind::kThreadCpu);
    spin(0.4);
    waited = thread_runqueue_seconds() - w0;
    cpu = clock_seconds(ClockKind::kThreadCpu) - c0;
  });
  std::thread high([&] {
    (void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    spin(0.5);
  });
  low.join();
  high.join();
  if (waited == 0 && slept == 0) GTEST_SKIP() << "this kernel keeps no /proc/thread-self/schedstat";
  EXPECT_GT(waited, 0.2) << "its CPU " << cpu;
  EXPECT_GT(waited, 2 * cpu);
  EXPECT_LT(slept, 0.05) << "a sleeping thread is not ready to run";
}

}  // namespace
}  // namespace zerodp
