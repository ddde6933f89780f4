// SPDX-License-Identifier: Apache-2.0
// ThreadGroup: the shared state of N thread ranks in one process (internal to
// the thread backend). Each rank owns one cache-line-aligned slot holding its
// phase counter and the description of its current call (pointers, count,
// dtype, ...); a collective is a few phases, and a rank passes a phase when
// every peer's counter has reached it.
//
// Waiting spins briefly, then yields, then sleeps on a condition variable, so
// oversubscribed groups (more ranks than cores) still make progress. Every
// wait checks, in order: the peers' counters, the poison flag (a rank failed;
// throws PeerFailedError), peers that left the group (CommError), and the
// deadline (CommTimeoutError naming the peer waited for).
// Subgroups (Communicator::split): a child group keeps its parent alive and
// knows which parent rank each of its ranks is; a failure poisons the child
// and its parent, and a poisoned parent poisons every child it made, so a
// rank waiting in any group of a run stops when any rank fails.
// Thread-safety: slot r is written only by rank r's calling thread; the rest
// is atomics or guarded by the group mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/quantize.h"
#include "comm/types.h"

namespace zerodp::comm {

// What one rank's current call looks like, published before its first phase.
struct CallInfo {
  Collective kind = Collective::kBarrier;
  Dtype dtype = Dtype::fp32();
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;  // the full count (reduce_scatter: input; all_gather: output; all_gather_value: bytes per rank)
  int root = -1;
  const void* in = nullptr;
  void* out = nullptr;
  double scalar = 0.0;
  uint64_t integer = 0;  // all_reduce_uint64's value
  // The compressed collectives: their wire format (kNone for the plain
  // ones); `in` then points at the rank's array of send spans.
  QuantFormat quant{};
};

class ThreadGroup {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ThreadGroup(int size);
  // A child group of `parent`: its rank k is the parent's rank parent_ranks[k].
  ThreadGroup(std::shared_ptr<ThreadGroup> parent, std::vector<int> parent_ranks);
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int size() const { return size_; }
  // "rank r" in messages, with its rank in the root group where this is a
  // split child ("rank 1 (world rank 3)"): a pipeline's and hybrid
  // sharding's groups name the failed or late rank as the user launched it.
  std::string rank_name(int rank) const;

  // The call description rank `rank` publishes for its call number `call`
  // (double-buffered by parity: a peer cannot be two calls ahead, so the
  // other parity is still being read at most).
  CallInfo& info(int rank, uint64_t call) { return slots_[rank].info[call & 1]; }
  const CallInfo& peer_info(int rank, uint64_t call) const { return slots_[rank].info[call & 1]; }

  // Rank `rank` arrives at its next phase and waits until every peer has too.
  // Errors start "[kind] rank r:"; `timeout` is what the deadline was
  // computed from, for the message. `opens_reads`: past this phase the rank
  // reads (or writes) its peers' buffers until it arrives at its next phase,
  // the collective's closing one; see wait_for_readers.
  void sync(int rank, Collective kind, Clock::time_point deadline, std::chrono::milliseconds timeout,
            bool opens_reads = false);

  // Rank `rank` leaves a collective by an error, and its caller may free the
  // buffers it published as soon as the error unwinds; a peer that saw every
  // rank arrive may still be copying from them. Publishes the failure (the
  // group must already be marked failed: poison first) and returns once no
  // peer is between a reading phase and its closing one; a peer still
  // waiting to open one sees the failure and does not read.
  void wait_for_readers(int rank);

  // Marks the group failed by `rank` (first caller wins) and wakes everyone.
  void poison(int rank, const std::string& reason);
  bool poisoned() const { return poisoned_.load(std::memory_order_acquire); }
  // The rank whose failure poisoned the group first, or -1.
  int first_failed_rank() const;

  // Rank `rank` will make no more calls; peers waiting for it throw.
  void depart(int rank);

  // The child group of split number `split` (every rank of `parent` counts
  // its splits the same way) for color `color`, whose members are the
  // parent ranks `members` in order: the first member to ask creates it,
  // the others get the same one (the table forgets it once all have).
  static std::shared_ptr<ThreadGroup> child(const std::shared_ptr<ThreadGroup>& parent, uint64_t split, int color,
                                            const std::vector<int>& members);

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> phase{0};
    std::atomic<bool> departed{false};
    std::atomic<bool> reading{false};  // set from entering a reading phase until the next phase or an error
    CallInfo info[2];
  };

  void wake_sleepers();
  // sync's arrival and wait, without the reading window.
  void wait_at_phase(int rank, Collective kind, Clock::time_point deadline, std::chrono::milliseconds timeout);
  [[noreturn]] void throw_poisoned(const std::string& what) const;
  // Records the failure (first caller wins; false if already recorded).
  bool claim_failure(int rank, const std::string& reason);
  // Sets the flag, wakes everyone, and poisons the children.
  void publish_poison(const std::string& reason);

  int size_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> poisoned_{false};
  std::atomic<int> sleepers_{0};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool oversubscribed_;                  // more ranks than cores: barely spin
  bool failed_ = false;                  // guarded by mutex_
  int failed_rank_ = -1;                 // guarded by mutex_; -1: poisoned by the parent group
  std::string failed_reason_;            // guarded by mutex_
  std::shared_ptr<ThreadGroup> parent_;  // set once, before the group is shared
  std::vector<int> parent_ranks_;
  std::vector<int> world_ranks_;  // per rank, its root group's rank; empty in the root
  struct PendingChild {
    std::shared_ptr<ThreadGroup> group;
    size_t fetched = 0;
  };
  std::map<std::pair<uint64_t, int>, PendingChild> pending_children_;  // guarded by mutex_
  std::vector<std::weak_ptr<ThreadGroup>> children_;                   // guarded by mutex_
};

}  // namespace zerodp::comm
