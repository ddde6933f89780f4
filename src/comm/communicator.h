// SPDX-License-Identifier: Apache-2.0
// Communicator: the collectives one rank of a group calls (all-reduce,
// reduce-scatter, all-gather, broadcast, barrier, and the small ones: scalar
// all-reduce, integer all-reduce, all-gather of one value per rank), with the
// same semantics on every backend (threads in one process, MPI processes).
//
// Contract (all backends):
// - A Communicator belongs to one rank. Its methods are called by one thread
//   at a time (the rank's main thread or a helper "comm thread" of that rank;
//   the caller orders the hand-over), and every rank calls the same
//   collectives in the same order with matching counts, dtypes, ops and root.
// - Results are deterministic: contributions are combined in rank order
//   0..N-1 in fp32 and rounded once (see types.h), so they are bitwise equal
//   on every backend, for every N, in every run.
// - Buffers are split with shard_range (shard.h): reduce_scatter's output
//   and all_gather's input are this rank's shard of the full count.
// - Every blocking call gives up after options().timeout and throws
//   CommTimeoutError naming the collective, this rank and the peer it waited
//   for. Any failure (timeout, mismatch, bad arguments, abort()) breaks the
//   communicator: later calls throw at once. In the thread backend it also
//   poisons the group, so peers throw PeerFailedError promptly.
// - Mismatched calls are detected where cheap (thread backend: always;
//   MPI: kind, dtype, op and count are carried in the message tag) and throw
//   CommError; arguments that do not fit (sizes, dtypes, root) are checked
//   locally before any communication.
// - stats() counts calls, the algorithm's bytes sent/received and seconds per
//   collective (see stats.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "comm/quantize.h"
#include "comm/stats.h"
#include "comm/types.h"
#include "core/error.h"

namespace zerodp::comm {

struct CommOptions {
  // How long one collective may wait for its peers before it throws.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// A collective waited longer than CommOptions::timeout for a peer.
class CommTimeoutError : public CommError {
 public:
  using CommError::CommError;
};

// A peer failed (or left the group) first; this rank's error is a
// consequence. run_thread_ranks reports the peer's root cause instead.
class PeerFailedError : public CommError {
 public:
  using CommError::CommError;
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const CommOptions& options() const { return options_; }
  // How long this communicator's next calls wait for their peers (the
  // groups split off it keep theirs). Not while one of its calls runs.
  void set_timeout(std::chrono::milliseconds timeout) { options_.timeout = timeout; }
  // "thread" or "mpi".
  virtual std::string_view backend_name() const = 0;

  // out = reduce(in over ranks). in and out have the same count and dtype;
  // in == out (in place) is allowed, other overlaps are not.
  void all_reduce(ConstBuffer in, Buffer out, ReduceOp op);
  // in: the full count C on every rank; out: this rank's shard,
  // shard_range(C, size(), rank()).count elements. out may be exactly the
  // own shard of in (in place).
  void reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op);
  // in: this rank's shard of out (shard_range(out.count, size(), rank()));
  // out: the full count on every rank. in may be exactly out's own shard.
  void all_gather(ConstBuffer in, Buffer out);
  // buf on root is copied into buf on every rank; 0 <= root < size().
  void broadcast(Buffer buf, int root);

  // ---- compressed collectives (ZeRO++ qwZ / qgZ; comm/quantize.h) ----
  // all_gather's contract, but each rank's shard crosses the link block-
  // quantized (f: int8 or int4 codes, f.block elements per scale, blocks
  // ending at the tensor starts `tensors` of out, as comm/quantize.h): every
  // rank quantizes its shard, and every shard of `out`, this rank's own
  // included, is the dequantized packed shard, so all ranks hold the same
  // bits. Counted as an all_gather of the packed bytes (codes + scales).
  // `scratch`: at least all_gather_quantized_scratch(out.count, size(), f,
  // tensors) bytes, not overlapping in or out. `key` keys f.rounding's
  // stochastic draws (comm/quantize.h); every rank passes the same.
  void all_gather_quantized(ConstBuffer in, Buffer out, QuantFormat f, std::span<std::byte> scratch,
                            TensorStarts tensors = {}, uint64_t key = 0);
  // reduce_scatter's contract, but each rank's part of every other rank's
  // shard crosses block-quantized: every contribution (this rank's own too)
  // is quantized per destination shard (blocks ending at the tensor starts
  // `tensors` of in), dequantized to fp32, summed in
  // comm/reduce.h's pairwise rank order (kSum, kAvg; kMax is refused) and
  // rounded once to out's dtype. A NaN or infinity in a contribution makes
  // its block NaN in the result. Counted as a reduce_scatter of the packed
  // bytes. `scratch`: at least reduce_scatter_quantized_scratch(in.count,
  // size(), rank(), f, tensors) bytes, not overlapping in or out. `key`:
  // as all_gather_quantized's, the same on every rank; each rank draws from
  // key_for_rank(key, rank()), so the ranks' roundings are independent.
  void reduce_scatter_quantized(ConstBuffer in, Buffer out, ReduceOp op, QuantFormat f, std::span<std::byte> scratch,
                                TensorStarts tensors = {}, uint64_t key = 0);
  void barrier();
  // Sum (in rank order, in fp64), average or max of one value per rank, for
  // norms and overflow flags. kMax propagates NaN.
  double all_reduce_scalar(double value, ReduceOp op);
  // Sum (in rank order) or max of one unsigned 64-bit integer per rank,
  // exact at every value (all_reduce_scalar's fp64 is exact only up to
  // 2^53): save ids, byte counts, flags. A sum past 2^64 - 1 throws CommError
  // on every rank; kAvg is refused (CommError) before any communication.
  uint64_t all_reduce_uint64(uint64_t value, ReduceOp op);
  // Every rank's `value`, on every rank, in rank order (element r is rank
  // r's): one all-gather of sizeof(T) bytes per rank, copied bit for bit, so
  // integers of any size and structs of several fields travel exactly.
  // Every rank must pass the same T (the backends check the byte count).
  // Padding bytes of T travel as they are; give T none if its bytes matter.
  template <typename T>
  std::vector<T> all_gather_value(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "all_gather_value copies the bytes of T");
    static_assert(std::is_default_constructible_v<T>, "all_gather_value returns a std::vector<T> of size()");
    std::vector<T> out(static_cast<size_t>(size_));
    all_gather_value_bytes(std::as_bytes(std::span<const T, 1>(&value, 1)), std::as_writable_bytes(std::span(out)));
    return out;
  }
  // all_gather_value's untyped form: `out` holds size() * value.size() bytes
  // and receives rank r's `value` at offset r * value.size(). value must not
  // overlap out.
  void all_gather_value_bytes(std::span<const std::byte> value, std::span<std::byte> out);

  // ---- groups (hybrid sharding) ----
  // Collective: the ranks that pass the same `color` (>= 0) form a new
  // communicator of their own, numbered in this communicator's rank order,
  // with this one's options. One all_gather_value of the colors (checked
  // against the timeout), then the backend's split (thread: a new group of
  // shared slots; MPI: MPI_Comm_split). The child counts its collectives in
  // its own stats() and in this communicator's too, so a run's totals include
  // the traffic of its groups. Failures cross the split both ways in the
  // thread backend (a rank that fails in a child poisons the parent group,
  // and a poisoned parent poisons its children). REQUIRES: this communicator
  // outlives the child, and the child is used by this rank's threads only,
  // under communicator.h's one-thread-at-a-time rule shared with this one.
  std::unique_ptr<Communicator> split(int color);

  const CommStats& stats() const { return stats_; }
  // A split-off child counts its calls in its own stats() only from here,
  // not in its parent's: a pipeline's point-to-point groups, which the rank
  // thread calls while its comm thread counts into the parent.
  void count_apart() { parent_stats_ = nullptr; }
  void reset_stats() { stats_ = CommStats{}; }

  // Marks this rank failed with `reason` (e.g. its body threw): later calls
  // throw, and in the thread backend peers blocked in (or entering) a
  // collective throw PeerFailedError promptly. Idempotent.
  void abort(std::string_view reason);
  bool broken() const { return !broken_reason_.empty(); }

  // Fault injection at a step that is not a collective (e.g. a checkpoint
  // save's points, fault_injection.h): fails here when ZERODP_FAULT names
  // this rank, `point` (an opaque name) and this visit of it. Cheap when no
  // fault is set.
  void fault_point(std::string_view point);

 protected:
  Communicator(int rank, int size, const CommOptions& options);

  // Backends implement these. Arguments are already validated locally
  // (sizes, dtypes, aliasing, root); the backend checks cross-rank
  // agreement. Errors are thrown as CommError with the "[collective] rank r:"
  // prefix (see message_prefix).
  virtual void do_all_reduce(ConstBuffer in, Buffer out, ReduceOp op) = 0;
  virtual void do_reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op) = 0;
  virtual void do_all_gather(ConstBuffer in, Buffer out) = 0;
  virtual void do_broadcast(Buffer buf, int root) = 0;
  virtual void do_barrier() = 0;
  virtual double do_all_reduce_scalar(double value, ReduceOp op) = 0;
  // The values of every rank, in rank order; the caller reduces them
  // (reduce_uint64s). op only travels with the call, for mismatch checks.
  virtual void do_all_reduce_uint64(uint64_t value, ReduceOp op, std::span<uint64_t> values) = 0;
  // out: size() * value.size() bytes, rank r's value at r * value.size().
  virtual void do_all_gather_value(std::span<const std::byte> value, std::span<std::byte> out) = 0;
  // The compressed collectives' transport: this rank sends send[k] to every
  // peer k and receives peer k's message for it into recv[k] (send[rank()]
  // and recv[rank()] are not used). The byte counts follow from `call`
  // (count, ranks, format) on both sides; a backend checks them where
  // it can. `call` describes the collective for mismatch checks.
  struct ExchangeCall {
    Collective kind = Collective::kAllGather;
    Dtype dtype = Dtype::fp32();
    ReduceOp op = ReduceOp::kSum;
    size_t count = 0;  // the full count
    QuantFormat quant{.codes = Quantization::kInt8};
  };
  virtual void do_exchange(const ExchangeCall& call, std::span<const std::span<const std::byte>> send,
                           std::span<const std::span<std::byte>> recv) = 0;
  // split()'s backend part: `colors` holds every rank's color (rank order);
  // returns this rank's communicator of the ranks with color `color`.
  virtual std::unique_ptr<Communicator> do_split(int color, std::span<const int> colors) = 0;
  // Called once when this communicator breaks (before the error propagates).
  virtual void on_broken(const std::string& reason) = 0;
  // True once a peer is known to have failed (thread backend: the group is
  // poisoned). Ends an injected hang (fault_injection.h); false by default.
  virtual bool peer_failed() const { return false; }

  // "[all_reduce] rank 3" for messages (with the backend's rank_name).
  std::string message_prefix(Collective kind) const;
  // "rank r" in messages; a backend that knows a split group's ranks in the
  // world says so too ("rank 1 (world rank 3)").
  virtual std::string rank_name(int rank) const;

 private:
  template <typename Fn>
  void run(Collective kind, uint64_t sent, uint64_t received, Fn&& fn);
  void mark_broken(const std::string& reason);

  int rank_;
  int size_;
  CommOptions options_;
  CommStats stats_;
  CommStats* parent_stats_ = nullptr;  // split(): the parent's counters, updated too
  std::string broken_reason_;
  // Fault injection (fault_injection.h) counts a rank's collectives over
  // all its groups and names it by its rank in the group it was split from:
  // a split child shares its parent's count and rank. The count is atomic:
  // the rank thread and the comm thread call different groups at once.
  std::shared_ptr<std::atomic<uint64_t>> calls_made_ = std::make_shared<std::atomic<uint64_t>>(0);
  int fault_rank_ = rank_;
};

}  // namespace zerodp::comm
