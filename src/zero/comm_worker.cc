// SPDX-License-Identifier: Apache-2.0
#include "zero/comm_worker.h"

namespace zerodp::zero {

CommWorker::CommWorker() : thread_([this] { run(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

CommWorker::Ticket CommWorker::submit(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(task));
  cv_.notify_all();
  return ++submitted_;
}

void CommWorker::wait(Ticket ticket) {
  std::unique_lock lock(mutex_);
  if (completed_ < ticket) {
    const double start = clock_seconds(ClockKind::kWall);
    cv_.wait(lock, [&] { return completed_ >= ticket; });  // failed and skipped tasks complete too
    waited_seconds_ += clock_seconds(ClockKind::kWall) - start;
  }
  if (failure_ && failed_ticket_ <= ticket) std::rethrow_exception(failure_);
}

void CommWorker::drain() {
  Ticket last;
  {
    std::lock_guard lock(mutex_);
    last = submitted_;
  }
  wait(last);
}

void CommWorker::run() {
  for (;;) {
    std::function<void()> task;
    bool skip;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      skip = failure_ != nullptr;  // after a failure, later tasks are skipped
    }
    std::exception_ptr error;
    if (!skip) {
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
    }
    // Release what the task holds (its buffers) before it counts as done, so
    // a waiter that sees it done also sees its memory returned.
    task = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (error && failure_ == nullptr) {
        failure_ = error;
        failed_ticket_ = completed_ + 1;
      }
      ++completed_;
    }
    cv_.notify_all();
  }
}

}  // namespace zerodp::zero
