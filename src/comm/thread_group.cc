#include "comm/thread_group.h"

#include <thread>

#include "comm/communicator.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ZDP_CPU_RELAX() _mm_pause()
#else
#define ZDP_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace zerodp::comm {
namespace {

// Spin, then yield, then sleep. Spinning wins when every rank has a core;
// yielding and sleeping keep an oversubscribed group (N > cores) moving, so
// such a group barely spins at all. The budgets are times, not iteration
// counts (a pause costs 10 ns on one CPU and 140 on another), and they are
// longer than a sleeping thread takes to wake (~60 us on a loaded machine):
// otherwise two ranks fall into a convoy where each sync waits for the
// other's wake-up.
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kYieldTime = std::chrono::microseconds(1000);
constexpr auto kOversubscribedSpinTime = std::chrono::microseconds(2);
constexpr auto kOversubscribedYieldTime = std::chrono::microseconds(200);

}  // namespace

ThreadGroup::ThreadGroup(int size)
    : size_(size),
      slots_(std::make_unique<Slot[]>(static_cast<size_t>(size))),
      oversubscribed_(size > static_cast<int>(std::thread::hardware_concurrency())) {
  ZDP_CHECK(size >= 1, ConfigError, "[thread_group] needs at least 1 rank, got {}", size);
}

void ThreadGroup::wake_sleepers() {
  // seq_cst store (by the caller) then seq_cst load here pairs with the
  // sleeper's increment-then-check, so a wake-up is never lost.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    cv_.notify_all();
  }
}

void ThreadGroup::throw_poisoned(const std::string& what) const {
  std::lock_guard<std::mutex> lock(mutex_);
  ZDP_THROW(PeerFailedError, "{}: peer rank {} failed: {}", what, failed_rank_, failed_reason_);
}

void ThreadGroup::sync(int rank, Collective kind, Clock::time_point deadline, std::chrono::milliseconds timeout) {
  // Only formatted on the error paths.
  auto what = [&] { return fmt::format("[{}] rank {}", collective_name(kind), rank); };
  Slot& self = slots_[rank];
  const uint64_t target = self.phase.load(std::memory_order_relaxed) + 1;
  self.phase.store(target, std::memory_order_seq_cst);
  wake_sleepers();

  int waiting_for = 0;  // peers below this index have arrived (counters only grow)
  auto all_arrived = [&] {
    while (waiting_for < size_ && slots_[waiting_for].phase.load(std::memory_order_seq_cst) >= target) {
      ++waiting_for;
    }
    return waiting_for == size_;
  };
  auto check_failures = [&] {
    if (poisoned_.load(std::memory_order_acquire)) throw_poisoned(what());
    const Slot& peer = slots_[waiting_for];
    if (peer.departed.load(std::memory_order_acquire) &&
        peer.phase.load(std::memory_order_acquire) < target) {
      ZDP_THROW(CommError,
                "{}: peer rank {} finished its work without making this call (ranks made different "
                "sequences of collective calls)",
                what(), waiting_for);
    }
  };
  auto throw_timeout = [&] {
    ZDP_THROW(CommTimeoutError, "{}: timed out after {} ms waiting for rank {} (it has not reached this collective)",
              what(), timeout.count(), waiting_for);
  };

  if (all_arrived()) return;
  const auto start = Clock::now();
  const auto spin_until = start + (oversubscribed_ ? kOversubscribedSpinTime : kSpinTime);
  const auto yield_until = start + (oversubscribed_ ? kOversubscribedYieldTime : kYieldTime);
  bool spinning = true, yielding = true;
  for (int i = 0;; ++i) {
    if (all_arrived()) break;
    check_failures();
    if (spinning) {
      ZDP_CPU_RELAX();
      if ((i & 31) == 31) {
        const auto now = Clock::now();
        if (now >= deadline) throw_timeout();
        spinning = now < spin_until;
      }
    } else if (yielding) {
      std::this_thread::yield();
      const auto now = Clock::now();
      if (now >= deadline) throw_timeout();
      yielding = now < yield_until;
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      bool timed_out = false;
      while (!all_arrived() && !poisoned_.load(std::memory_order_seq_cst) &&
             !slots_[waiting_for].departed.load(std::memory_order_seq_cst)) {
        if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
          timed_out = !all_arrived();
          break;
        }
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      lock.unlock();
      if (all_arrived()) break;
      check_failures();
      if (timed_out || Clock::now() >= deadline) throw_timeout();
    }
  }
  // Pairs with the peers' seq_cst stores: their published CallInfo and
  // buffer contents are visible from here on.
  std::atomic_thread_fence(std::memory_order_acquire);
}

void ThreadGroup::poison(int rank, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_rank_ >= 0) return;
    failed_rank_ = rank;
    failed_reason_ = reason;
    poisoned_.store(true, std::memory_order_seq_cst);
  }
  cv_.notify_all();
}

int ThreadGroup::first_failed_rank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_rank_;
}

void ThreadGroup::depart(int rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[rank].departed.store(true, std::memory_order_seq_cst);
  }
  cv_.notify_all();
}

}  // namespace zerodp::comm
