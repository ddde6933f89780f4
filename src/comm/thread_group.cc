// SPDX-License-Identifier: Apache-2.0
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

// Spin briefly, then yield, then sleep. The budgets are times, not
// iteration counts (a pause costs 10 ns on one CPU and 140 on another).
// Spinning only pays when the peer runs on another core at that moment; on
// a loaded machine two ranks often share one core, and then a spinning rank
// only delays the peer it waits for (measured: a long spin turned 1 us calls
// into 500 us ones). Yielding hands the core to the peer when it shares it
// and returns at once when nothing else wants the core, so a yield loop is
// the robust middle; it must also outlast a sleeping thread's wake-up
// (~60 us when loaded), or ranks fall into a convoy where every sync waits
// for the other's wake-up. Oversubscribed groups skip the spin.
constexpr auto kSpinTime = std::chrono::microseconds(5);
constexpr auto kYieldTime = std::chrono::microseconds(2000);
constexpr auto kOversubscribedSpinTime = std::chrono::microseconds(0);
constexpr auto kOversubscribedYieldTime = std::chrono::microseconds(2000);

}  // namespace

ThreadGroup::ThreadGroup(int size)
    : size_(size),
      slots_(std::make_unique<Slot[]>(static_cast<size_t>(size))),
      oversubscribed_(size > static_cast<int>(std::thread::hardware_concurrency())) {
  ZDP_CHECK(size >= 1, ConfigError, "[thread_group] needs at least 1 rank, got {}", size);
}

ThreadGroup::ThreadGroup(std::shared_ptr<ThreadGroup> parent, std::vector<int> parent_ranks)
    : ThreadGroup(static_cast<int>(parent_ranks.size())) {
  parent_ = std::move(parent);
  parent_ranks_ = std::move(parent_ranks);
  for (int r : parent_ranks_) {
    world_ranks_.push_back(parent_->world_ranks_.empty() ? r : parent_->world_ranks_[static_cast<size_t>(r)]);
  }
}

std::string ThreadGroup::rank_name(int rank) const {
  if (world_ranks_.empty() || rank < 0 || rank >= size_) return fmt::format("rank {}", rank);
  return fmt::format("rank {} (world rank {})", rank, world_ranks_[static_cast<size_t>(rank)]);
}

std::shared_ptr<ThreadGroup> ThreadGroup::child(const std::shared_ptr<ThreadGroup>& parent, uint64_t split, int color,
                                                const std::vector<int>& members) {
  std::shared_ptr<ThreadGroup> group;
  bool poisoned = false;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(parent->mutex_);
    const auto key = std::make_pair(split, color);
    auto it = parent->pending_children_.find(key);
    if (it == parent->pending_children_.end()) {
      auto made = std::make_shared<ThreadGroup>(parent, members);
      parent->children_.push_back(made);
      it = parent->pending_children_.emplace(key, PendingChild{std::move(made), 0}).first;
    }
    group = it->second.group;
    if (++it->second.fetched == members.size()) parent->pending_children_.erase(it);
    poisoned = parent->failed_;
    reason = parent->failed_reason_;
  }
  // A parent that failed already fails its new child too.
  if (poisoned && group->claim_failure(-1, reason)) group->publish_poison(reason);
  return group;
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
  if (failed_rank_ < 0) ZDP_THROW(PeerFailedError, "{}: a rank of the parent group failed: {}", what, failed_reason_);
  ZDP_THROW(PeerFailedError, "{}: peer {} failed: {}", what, rank_name(failed_rank_), failed_reason_);
}

void ThreadGroup::sync(int rank, Collective kind, Clock::time_point deadline, std::chrono::milliseconds timeout,
                       bool opens_reads) {
  Slot& self = slots_[rank];
  // Ends the reading window of the previous phase (after this rank's copies:
  // the store is a release) and opens this one's before the rank can see its
  // peers arrive, so a failed peer's wait_for_readers either sees the flag or
  // this rank sees the failure below and reads nothing.
  self.reading.store(opens_reads, std::memory_order_seq_cst);
  try {
    wait_at_phase(rank, kind, deadline, timeout);
    if (opens_reads && poisoned_.load(std::memory_order_seq_cst)) {
      throw_poisoned(fmt::format("[{}] {}", collective_name(kind), rank_name(rank)));
    }
  } catch (...) {
    self.reading.store(false, std::memory_order_seq_cst);
    throw;
  }
}

void ThreadGroup::wait_for_readers(int rank) {
  slots_[rank].reading.store(false, std::memory_order_seq_cst);
  {
    // poison() may have found the failure claimed by a rank that has not
    // published it yet: publish it here, as peers must see it before reading.
    std::lock_guard<std::mutex> lock(mutex_);
    poisoned_.store(true, std::memory_order_seq_cst);
  }
  cv_.notify_all();
  // A reader is copying (bounded work) or about to see the failure in its
  // sync and clear its flag, so this ends; yield, as the reader may share
  // this rank's core.
  for (int k = 0; k < size_; ++k) {
    const Slot& peer = slots_[k];
    while (peer.reading.load(std::memory_order_seq_cst) && !peer.departed.load(std::memory_order_seq_cst)) {
      std::this_thread::yield();
    }
  }
}

void ThreadGroup::wait_at_phase(int rank, Collective kind, Clock::time_point deadline,
                                std::chrono::milliseconds timeout) {
  // Only formatted on the error paths.
  auto what = [&] { return fmt::format("[{}] {}", collective_name(kind), rank_name(rank)); };
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
    if (peer.departed.load(std::memory_order_acquire) && peer.phase.load(std::memory_order_acquire) < target) {
      ZDP_THROW(CommError,
                "{}: peer {} finished its work without making this call (ranks made different "
                "sequences of collective calls)",
                what(), rank_name(waiting_for));
    }
  };
  auto throw_timeout = [&] {
    ZDP_THROW(CommTimeoutError, "{}: timed out after {} ms waiting for {} (it has not reached this collective)", what(),
              timeout.count(), rank_name(waiting_for));
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
  // No fence needed (GCC rejects atomic_thread_fence under TSan): all_arrived
  // read every peer's counter with a seq_cst (so acquire) load that saw the
  // peer's seq_cst store of this phase, so the peers' published CallInfo and
  // buffer contents are visible from here on.
}

// The failure is recorded here first, then in the parent (so the parent names
// this rank as the first to fail before any peer here can see the flag and
// fail in turn), then published here and in the children.
void ThreadGroup::poison(int rank, const std::string& reason) {
  if (!claim_failure(rank, reason)) return;
  if (parent_) parent_->poison(parent_ranks_[static_cast<size_t>(rank)], reason);
  publish_poison(reason);
}

bool ThreadGroup::claim_failure(int rank, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) return false;
  failed_ = true;
  failed_rank_ = rank;
  failed_reason_ = reason;
  return true;
}

void ThreadGroup::publish_poison(const std::string& reason) {
  std::vector<std::shared_ptr<ThreadGroup>> children;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    poisoned_.store(true, std::memory_order_seq_cst);
    for (const auto& weak : children_) {
      if (auto c = weak.lock()) children.push_back(std::move(c));
    }
  }
  cv_.notify_all();
  for (const auto& c : children) {
    if (c->claim_failure(-1, reason)) c->publish_poison(reason);
  }
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
