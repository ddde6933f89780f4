// SPDX-License-Identifier: Apache-2.0
// The thread backend: N ranks as threads of one process over shared memory.
//
// Every collective publishes its buffers' addresses, then reads the peers'
// memory directly (no staging copies):
//   reduce_scatter: rank r sums shard r of all N inputs, in rank order,
//                   straight into its output;
//   all_gather:     rank r copies every peer's shard into its output;
//   all_reduce:     rank r sums shard r of all N inputs, in rank order, and
//                   writes it into shard r of every rank's output (the
//                   reduce-scatter and all-gather fused: each input byte is
//                   read once, each output byte written once);
//   broadcast:      non-roots copy the root's buffer;
//   all_gather_value: rank r copies every peer's value into its output;
//   the compressed collectives' exchange: rank r copies the packed message
//                   each peer prepared for it into its receive slot.
// The scalar all-reduces (fp64, uint64) pass their values in the call
// description itself.
// A final phase keeps every rank inside the call until no peer reads or
// writes its buffers any more, so buffers may be reused as soon as a call
// returns.
// Thread-safety: see communicator.h (one calling thread at a time per rank).
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/thread_group.h"

namespace zerodp::comm {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, const CommOptions& options);
  ~ThreadCommunicator() override;

  std::string_view backend_name() const override { return "thread"; }

  // This rank makes no more calls: peers waiting for it throw instead of
  // timing out. Called by the destructor too.
  void depart();
  const std::shared_ptr<ThreadGroup>& group() const { return group_; }

 protected:
  void do_all_reduce(ConstBuffer in, Buffer out, ReduceOp op) override;
  void do_reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op) override;
  void do_all_gather(ConstBuffer in, Buffer out) override;
  void do_broadcast(Buffer buf, int root) override;
  void do_barrier() override;
  double do_all_reduce_scalar(double value, ReduceOp op) override;
  void do_all_reduce_uint64(uint64_t value, ReduceOp op, std::span<uint64_t> values) override;
  void do_all_gather_value(std::span<const std::byte> value, std::span<std::byte> out) override;
  void do_exchange(const ExchangeCall& call, std::span<const std::span<const std::byte>> send,
                   std::span<const std::span<std::byte>> recv) override;
  std::unique_ptr<Communicator> do_split(int color, std::span<const int> colors) override;
  void on_broken(const std::string& reason) override;
  bool peer_failed() const override { return group_->poisoned(); }

 private:
  std::string rank_name(int rank) const override;
  // Publishes this rank's call, waits for all peers, and checks that they
  // made the same call (CommError naming the first that did not).
  const CallInfo& begin(const CallInfo& call);
  void sync(Collective kind);

  std::shared_ptr<ThreadGroup> group_;
  uint64_t calls_ = 0;
  uint64_t splits_ = 0;  // split() calls made, the key of the child group
  ThreadGroup::Clock::time_point deadline_{};
  std::vector<const void*> inputs_;  // per-call scratch: one pointer per rank
  std::vector<void*> outputs_;
  bool departed_ = false;
};

}  // namespace zerodp::comm
