// SPDX-License-Identifier: Apache-2.0
// CommWorker: one background thread per rank that runs that rank's
// collectives in submission order, so communication overlaps computation
// (stage 0's bucketed all-reduce during backward, stage 3's prefetch of the
// next unit's parameters).
//
// Every rank submits the same collectives in the same order, so the
// Communicator still sees one caller at a time, in the same order everywhere.
// A task that throws fails its ticket and every later one: the exception is
// rethrown to whoever waits (the rank's compute thread), never swallowed.
// Thread-safety: submit/wait/drain are called from the owning rank's compute
// thread; tasks run on the worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/clock.h"

namespace zerodp::zero {

// A rank's thread times so far; a step's are the difference of two.
struct RankThreadTimes {
  double cpu_seconds = 0;        // CPU of the rank's compute thread and its comm thread
  double comm_cpu_seconds = 0;   // CPU of the comm thread alone
  double comm_wait_seconds = 0;  // wall time the compute thread waited for the comm thread
  double runqueue_seconds = 0;   // wall time the compute thread was ready but off its core
  RankThreadTimes operator-(const RankThreadTimes& b) const {
    return {cpu_seconds - b.cpu_seconds, comm_cpu_seconds - b.comm_cpu_seconds, comm_wait_seconds - b.comm_wait_seconds,
            runqueue_seconds - b.runqueue_seconds};
  }
};

class CommWorker {
 public:
  using Ticket = uint64_t;

  CommWorker();
  ~CommWorker();  // finishes queued tasks, then joins
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // Queues a task; returns its ticket (1, 2, 3, ... in submission order).
  Ticket submit(std::function<void()> task);
  // Blocks until the task with this ticket has run; rethrows the first
  // failure of any task up to and including it.
  void wait(Ticket ticket);
  // Blocks until every submitted task has run; rethrows the first failure.
  void drain();
  // The worker thread's CPU time so far (core/clock.h).
  double cpu_seconds() { return thread_cpu_seconds(thread_.native_handle()); }
  // Wall time the caller of wait/drain has spent blocked so far: the
  // communication its compute did not hide.
  double waited_seconds() {
    std::lock_guard lock(mutex_);
    return waited_seconds_;
  }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  Ticket submitted_ = 0;
  Ticket completed_ = 0;
  std::exception_ptr failure_;
  Ticket failed_ticket_ = 0;  // the task that failed first
  bool stopping_ = false;
  double waited_seconds_ = 0;
  std::thread thread_;  // last: started after the state above exists
};

}  // namespace zerodp::zero
