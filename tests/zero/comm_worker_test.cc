// SPDX-License-Identifier: Apache-2.0
#include "zero/comm_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace zerodp::zero {
namespace {

TEST(CommWorker, RunsTasksInOrderAndWaitsForTickets) {
  CommWorker worker;
  std::vector<int> order;
  CommWorker::Ticket last = 0;
  for (int i = 0; i < 100; ++i) last = worker.submit([&order, i] { order.push_back(i); });
  worker.wait(last);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(CommWorker, AFailureIsRethrownAndLaterTasksAreSkipped) {
  CommWorker worker;
  bool later_ran = false;
  const auto ok = worker.submit([] {});
  worker.submit([] { throw std::runtime_error("collective failed"); });
  const auto after = worker.submit([&] { later_ran = true; });
  EXPECT_NO_THROW(worker.wait(ok));
  EXPECT_THROW(worker.wait(after), std::runtime_error);
  EXPECT_THROW(worker.drain(), std::runtime_error);
  EXPECT_FALSE(later_ran);
}

// A task's captures (its buffers) are gone by the time wait() returns.
TEST(CommWorker, CapturesAreReleasedBeforeTheTicketCompletes) {
  CommWorker worker;
  for (int i = 0; i < 200; ++i) {
    auto held = std::make_shared<int>(i);
    std::weak_ptr<int> watch = held;
    const auto ticket = worker.submit([held = std::move(held)] { (void)*held; });
    worker.wait(ticket);
    ASSERT_TRUE(watch.expired()) << i;
  }
}

// The worker's CPU clock counts what its tasks spend, not the caller's.
TEST(CommWorker, ItsCpuSecondsCountItsTasks) {
  CommWorker worker;
  const double before = worker.cpu_seconds(), caller = clock_seconds(ClockKind::kThreadCpu);
  volatile double sink = 0;
  worker.wait(worker.submit([&] {
    const double start = clock_seconds(ClockKind::kThreadCpu);
    while (clock_seconds(ClockKind::kThreadCpu) - start < 0.02) sink = sink + 1.0;
  }));
  EXPECT_GE(worker.cpu_seconds() - before, 0.02);
  EXPECT_LT(clock_seconds(ClockKind::kThreadCpu) - caller, 0.02) << "the caller waited, it did not spin";
}

// The caller's wait counts the wall time it blocked: none for a task that
// is done before the wait, the task's remaining time for one still running.
TEST(CommWorker, ItsWaitedSecondsCountTheCallersBlockedTime) {
  CommWorker worker;
  const auto done = worker.submit([] {});
  worker.drain();
  const double before = worker.waited_seconds();
  worker.wait(done);
  EXPECT_EQ(worker.waited_seconds(), before) << "a finished task is not waited for";
  const double start = clock_seconds(ClockKind::kWall);
  worker.wait(worker.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }));
  const double blocked = clock_seconds(ClockKind::kWall) - start;
  EXPECT_GE(worker.waited_seconds() - before, 0.025);
  EXPECT_LE(worker.waited_seconds() - before, blocked);
}

}  // namespace
}  // namespace zerodp::zero
