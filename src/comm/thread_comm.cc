// SPDX-License-Identifier: Apache-2.0
#include "comm/thread_comm.h"

#include <fmt/format.h>

#include <cstring>
#include <exception>

#include "comm/reduce.h"
#include "comm/shard.h"

namespace zerodp::comm {
namespace {

std::string describe(const CallInfo& c) {
  if (c.quant.codes != Quantization::kNone) {
    return fmt::format("{} of {} {} elements as {} blocks of {} (op {})", collective_name(c.kind), c.count,
                       c.dtype.name(), quantization_name(c.quant.codes), c.quant.block, reduce_op_name(c.op));
  }
  switch (c.kind) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
      return fmt::format("{} of {} {} elements (op {})", collective_name(c.kind), c.count, c.dtype.name(),
                         reduce_op_name(c.op));
    case Collective::kAllGather:
      return fmt::format("{} of {} {} elements", collective_name(c.kind), c.count, c.dtype.name());
    case Collective::kBroadcast:
      return fmt::format("{} of {} {} elements from root {}", collective_name(c.kind), c.count, c.dtype.name(), c.root);
    case Collective::kBarrier:
      return "barrier";
    case Collective::kScalarAllReduce:
    case Collective::kIntAllReduce:
      return fmt::format("{} (op {})", collective_name(c.kind), reduce_op_name(c.op));
    case Collective::kValueAllGather:
      return fmt::format("{} of {} bytes", collective_name(c.kind), c.count);
  }
  return "?";
}

bool same_call(const CallInfo& a, const CallInfo& b) {
  if (a.kind != b.kind || a.quant != b.quant) return false;
  if (a.quant.codes != Quantization::kNone) return a.count == b.count && a.dtype == b.dtype && a.op == b.op;
  switch (a.kind) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
      return a.count == b.count && a.dtype == b.dtype && a.op == b.op;
    case Collective::kAllGather:
      return a.count == b.count && a.dtype == b.dtype;
    case Collective::kBroadcast:
      return a.count == b.count && a.dtype == b.dtype && a.root == b.root;
    case Collective::kBarrier:
      return true;
    case Collective::kScalarAllReduce:
    case Collective::kIntAllReduce:
      return a.op == b.op;
    case Collective::kValueAllGather:
      return a.count == b.count;
  }
  return false;
}

}  // namespace

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, const CommOptions& options)
    : Communicator(rank, group->size(), options),
      group_(std::move(group)),
      inputs_(group_->size()),
      outputs_(group_->size()) {}

ThreadCommunicator::~ThreadCommunicator() {
  // Destroyed while this rank's exception unwinds (a group communicator the
  // rank's work made): its peers must fail as peers of a failed rank, and
  // the run report this rank's error, not take it for a rank that finished
  // without making their call (which raced with the rank's own abort).
  if (std::uncaught_exceptions() > 0 && !departed_) group_->poison(rank(), "the rank failed while in this group");
  depart();
}

void ThreadCommunicator::depart() {
  if (departed_) return;
  departed_ = true;
  group_->depart(rank());
}

std::unique_ptr<Communicator> ThreadCommunicator::do_split(int color, std::span<const int> colors) {
  std::vector<int> members;
  int child_rank = -1;
  for (int k = 0; k < size(); ++k) {
    if (colors[static_cast<size_t>(k)] != color) continue;
    if (k == rank()) child_rank = static_cast<int>(members.size());
    members.push_back(k);
  }
  auto child = ThreadGroup::child(group_, ++splits_, color, members);
  return std::make_unique<ThreadCommunicator>(std::move(child), child_rank, options());
}

std::string ThreadCommunicator::rank_name(int rank) const { return group_->rank_name(rank); }

void ThreadCommunicator::on_broken(const std::string& reason) {
  group_->poison(rank(), reason);
  // The error unwinds into code that may free the buffers this rank's call
  // published (a pipeline's workspaces): not while a peer still reads them.
  group_->wait_for_readers(rank());
}

void ThreadCommunicator::sync(Collective kind) { group_->sync(rank(), kind, deadline_, options().timeout); }

const CallInfo& ThreadCommunicator::begin(const CallInfo& call) {
  deadline_ = ThreadGroup::Clock::now() + options().timeout;
  const uint64_t id = ++calls_;
  group_->info(rank(), id) = call;
  // Past the opening phase, a collective with a closing one reads its peers'
  // buffers until it arrives there; the value-only calls read the slots.
  const bool reads_peers = call.kind != Collective::kBarrier && call.kind != Collective::kScalarAllReduce &&
                           call.kind != Collective::kIntAllReduce;
  group_->sync(rank(), call.kind, deadline_, options().timeout, reads_peers);
  for (int k = 0; k < size(); ++k) {
    const CallInfo& peer = group_->peer_info(k, id);
    if (!same_call(peer, call)) {
      ZDP_THROW(CommError, "{}: mismatched collective calls: {} called {} while this rank called {}",
                message_prefix(call.kind), rank_name(k), describe(peer), describe(call));
    }
  }
  return group_->peer_info(rank(), id);
}

void ThreadCommunicator::do_reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op) {
  const Collective kind = Collective::kReduceScatter;
  CallInfo call{.kind = kind, .dtype = in.dtype, .op = op, .count = in.count, .in = in.data, .out = out.data};
  begin(call);
  const uint64_t id = calls_;
  const ShardRange own = shard_range(in.count, size(), rank());
  const size_t esize = in.dtype.size();
  for (int k = 0; k < size(); ++k) {
    inputs_[k] = static_cast<const std::byte*>(group_->peer_info(k, id).in) + own.offset * esize;
  }
  // One rank in place: the sum of one contribution is itself (a pass over
  // the buffer saved: the engine reduces its gradients in place).
  const bool nothing_to_do = size() == 1 && in.data == out.data;
  if (own.count > 0 && !nothing_to_do) reduce_ordered(inputs_, out.data, own.count, in.dtype, op);
  sync(kind);  // peers are done reading our input
}

void ThreadCommunicator::do_all_gather(ConstBuffer in, Buffer out) {
  const Collective kind = Collective::kAllGather;
  CallInfo call{.kind = kind, .dtype = out.dtype, .count = out.count, .in = in.data, .out = out.data};
  begin(call);
  const uint64_t id = calls_;
  const size_t esize = out.dtype.size();
  // Start with the next rank so ranks do not all read the same peer at once.
  for (int i = 0; i < size(); ++i) {
    const int k = (rank() + i) % size();
    const ShardRange shard = shard_range(out.count, size(), k);
    const void* src = group_->peer_info(k, id).in;
    std::byte* dst = out.byte_data() + shard.offset * esize;
    if (shard.count > 0 && src != dst) copy_bytes(dst, src, shard.count * esize);
  }
  sync(kind);
}

void ThreadCommunicator::do_all_reduce(ConstBuffer in, Buffer out, ReduceOp op) {
  const Collective kind = Collective::kAllReduce;
  CallInfo call{.kind = kind, .dtype = in.dtype, .op = op, .count = in.count, .in = in.data, .out = out.data};
  begin(call);
  const uint64_t id = calls_;
  const size_t esize = in.dtype.size();
  // Rank r reduces shard r of every input, in rank order, and writes the
  // result into shard r of every rank's output: the reduce-scatter and the
  // all-gather in one pass, with no reduced shard read back. In place is
  // safe: only rank r touches shard r of any buffer, and each block of
  // inputs is read before that block of outputs is written.
  const ShardRange own = shard_range(in.count, size(), rank());
  for (int k = 0; k < size(); ++k) {
    const CallInfo& peer = group_->peer_info(k, id);
    inputs_[k] = static_cast<const std::byte*>(peer.in) + own.offset * esize;
    outputs_[k] = static_cast<std::byte*>(peer.out) + own.offset * esize;
  }
  const bool nothing_to_do = size() == 1 && in.data == out.data;  // one rank in place, as above
  if (own.count > 0 && !nothing_to_do) reduce_ordered_into_all(inputs_, outputs_, own.count, in.dtype, op);
  if (size() > 1) sync(kind);  // every shard of our output is written
}

void ThreadCommunicator::do_broadcast(Buffer buf, int root) {
  const Collective kind = Collective::kBroadcast;
  CallInfo call{.kind = kind, .dtype = buf.dtype, .count = buf.count, .root = root, .in = buf.data};
  begin(call);
  if (rank() != root && buf.count > 0) {
    copy_bytes(buf.data, group_->peer_info(root, calls_).in, buf.bytes());
  }
  sync(kind);
}

void ThreadCommunicator::do_barrier() { begin(CallInfo{.kind = Collective::kBarrier}); }

double ThreadCommunicator::do_all_reduce_scalar(double value, ReduceOp op) {
  begin(CallInfo{.kind = Collective::kScalarAllReduce, .op = op, .scalar = value});
  // No closing phase: the value lives in the double-buffered CallInfo, which
  // a peer overwrites only after everyone has passed our next call's start.
  std::vector<double> values(static_cast<size_t>(size()));
  for (int k = 0; k < size(); ++k) values[k] = group_->peer_info(k, calls_).scalar;
  return reduce_scalars(values, op);
}

void ThreadCommunicator::do_all_reduce_uint64(uint64_t value, ReduceOp op, std::span<uint64_t> values) {
  begin(CallInfo{.kind = Collective::kIntAllReduce, .op = op, .integer = value});
  // No closing phase, as for the fp64 scalar.
  for (int k = 0; k < size(); ++k) values[k] = group_->peer_info(k, calls_).integer;
}

void ThreadCommunicator::do_all_gather_value(std::span<const std::byte> value, std::span<std::byte> out) {
  const Collective kind = Collective::kValueAllGather;
  begin(CallInfo{.kind = kind, .count = value.size(), .in = value.data(), .out = out.data()});
  const uint64_t id = calls_;
  const size_t bytes = value.size();
  for (int k = 0; k < size(); ++k) {
    if (bytes > 0) std::memcpy(out.data() + static_cast<size_t>(k) * bytes, group_->peer_info(k, id).in, bytes);
  }
  sync(kind);  // peers are done reading our value
}

void ThreadCommunicator::do_exchange(const ExchangeCall& call, std::span<const std::span<const std::byte>> send,
                                     std::span<const std::span<std::byte>> recv) {
  begin(CallInfo{.kind = call.kind,
                 .dtype = call.dtype,
                 .op = call.op,
                 .count = call.count,
                 .in = send.data(),
                 .quant = call.quant});
  const uint64_t id = calls_;
  for (int i = 1; i < size(); ++i) {
    const int k = (rank() + i) % size();
    const auto* peer_send = static_cast<const std::span<const std::byte>*>(group_->peer_info(k, id).in);
    const std::span<const std::byte> message = peer_send[rank()];
    ZDP_CHECK(message.size() == recv[k].size(), CommError,
              "{}: mismatched collective calls: rank {} sent {} bytes where this rank expects {}",
              message_prefix(call.kind), k, message.size(), recv[k].size());
    if (!message.empty()) std::memcpy(recv[k].data(), message.data(), message.size());
  }
  sync(call.kind);  // peers are done reading our messages
}

}  // namespace zerodp::comm
