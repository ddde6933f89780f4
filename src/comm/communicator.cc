// SPDX-License-Identifier: Apache-2.0
#include "comm/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <vector>

#include "comm/fault_injection.h"
#include "comm/reduce.h"
#include "comm/shard.h"
#include "core/convert.h"

namespace zerodp::comm {
namespace {

// True when the byte ranges overlap without being the same range: the only
// aliasing the collectives accept is "exactly the same elements".
bool partially_overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  const bool overlap = pa < pb + b_bytes && pb < pa + a_bytes;
  return overlap && !(pa == pb && a_bytes == b_bytes);
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// The packed bytes of every rank's shard of `count` elements.
std::vector<uint64_t> packed_shard_bytes(size_t count, int ranks, QuantFormat f, TensorStarts tensors) {
  std::vector<uint64_t> bytes(static_cast<size_t>(ranks));
  for (int k = 0; k < ranks; ++k) bytes[k] = quantized_bytes(shard_part(count, ranks, k, tensors), f);
  return bytes;
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

std::string_view collective_name(Collective kind) {
  switch (kind) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kScalarAllReduce:
      return "all_reduce_scalar";
    case Collective::kValueAllGather:
      return "all_gather_value";
    case Collective::kIntAllReduce:
      return "all_reduce_uint64";
  }
  return "?";
}

Communicator::Communicator(int rank, int size, const CommOptions& options)
    : rank_(rank), size_(size), options_(options) {
  ZDP_CHECK(size >= 1 && rank >= 0 && rank < size, ConfigError, "[communicator] rank {} is out of range for {} ranks",
            rank, size);
  ZDP_CHECK(options.timeout.count() > 0, ConfigError, "[communicator] timeout must be positive, got {} ms",
            options.timeout.count());
}

Communicator::~Communicator() = default;

std::string Communicator::message_prefix(Collective kind) const {
  return fmt::format("[{}] {}", collective_name(kind), rank_name(rank_));
}

void Communicator::mark_broken(const std::string& reason) {
  if (!broken_reason_.empty()) return;
  broken_reason_ = reason.empty() ? std::string("unknown failure") : reason;
  on_broken(broken_reason_);
}

void Communicator::abort(std::string_view reason) { mark_broken(std::string(reason)); }

void Communicator::fault_point(std::string_view point) {
  inject_save_fault_if_due(fault_rank_, point, [this] { return peer_failed(); });
}

template <typename Fn>
void Communicator::run(Collective kind, uint64_t sent, uint64_t received, Fn&& fn) {
  if (!broken_reason_.empty()) {
    ZDP_THROW(CommError, "{}: the communicator is broken by an earlier failure ({})", message_prefix(kind),
              broken_reason_);
  }
  const auto start = std::chrono::steady_clock::now();
  const uint64_t call = ++*calls_made_;
  try {
    inject_fault_if_due(fault_rank_, call, kind, [this] { return peer_failed(); });
    fn();
  } catch (const Error& e) {
    mark_broken(e.message());
    throw;
  } catch (const std::exception& e) {
    mark_broken(fmt::format("{}: {}", message_prefix(kind), e.what()));
    throw;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (CommStats* counters : {&stats_, parent_stats_}) {
    if (counters == nullptr) continue;
    auto& s = (*counters)[kind];
    s.calls += 1;
    s.bytes_sent += sent;
    s.bytes_received += received;
    s.seconds += seconds;
  }
}

std::string Communicator::rank_name(int rank) const { return fmt::format("rank {}", rank); }

std::unique_ptr<Communicator> Communicator::split(int color) {
  ZDP_CHECK(color >= 0, CommError, "[split] rank {}: color {} must be >= 0", rank_, color);
  ZDP_CHECK(broken_reason_.empty(), CommError, "[split] rank {}: the communicator is broken by an earlier failure ({})",
            rank_, broken_reason_);
  const std::vector<int> colors = all_gather_value(color);
  std::unique_ptr<Communicator> child;
  try {
    child = do_split(color, colors);
  } catch (const Error& e) {
    mark_broken(e.message());
    throw;
  }
  child->parent_stats_ = &stats_;
  child->calls_made_ = calls_made_;
  child->fault_rank_ = fault_rank_;
  return child;
}

void Communicator::all_reduce(ConstBuffer in, Buffer out, ReduceOp op) {
  const Collective kind = Collective::kAllReduce;
  const ShardRange own = shard_range(out.count, size_, rank_);
  const uint64_t full = out.bytes();
  const uint64_t shard = own.count * out.dtype.size();
  const uint64_t n = static_cast<uint64_t>(size_);
  // Reduce-scatter, then all-gather: see stats.h.
  run(kind, (full - shard) + (n - 1) * shard, (n - 1) * shard + (full - shard), [&] {
    ZDP_CHECK(in.dtype == out.dtype, CommError, "{}: input dtype {} differs from output dtype {}", message_prefix(kind),
              in.dtype.name(), out.dtype.name());
    ZDP_CHECK(in.count == out.count, CommError, "{}: input has {} elements but output has {}", message_prefix(kind),
              in.count, out.count);
    ZDP_CHECK(!partially_overlaps(in.data, in.bytes(), out.data, out.bytes()), CommError,
              "{}: input and output overlap partially (only in == out is allowed)", message_prefix(kind));
    ZDP_CHECK(out.count == 0 || (in.data != nullptr && out.data != nullptr), CommError,
              "{}: null buffer with {} elements", message_prefix(kind), out.count);
    do_all_reduce(in, out, op);
  });
}

void Communicator::reduce_scatter(ConstBuffer in, Buffer out, ReduceOp op) {
  const Collective kind = Collective::kReduceScatter;
  const ShardRange own = shard_range(in.count, size_, rank_);
  const uint64_t shard = own.count * in.dtype.size();
  run(kind, in.bytes() - shard, static_cast<uint64_t>(size_ - 1) * shard, [&] {
    ZDP_CHECK(in.dtype == out.dtype, CommError, "{}: input dtype {} differs from output dtype {}", message_prefix(kind),
              in.dtype.name(), out.dtype.name());
    ZDP_CHECK(out.count == own.count, CommError,
              "{}: output has {} elements but this rank's shard of {} elements over {} ranks has {}",
              message_prefix(kind), out.count, in.count, size_, own.count);
    const ConstBuffer own_in = in.slice(own.offset, own.count);
    ZDP_CHECK(!partially_overlaps(in.data, in.bytes(), out.data, out.bytes()) || own_in.data == out.data, CommError,
              "{}: output overlaps the input other than as this rank's own shard", message_prefix(kind));
    ZDP_CHECK(in.count == 0 || (in.data != nullptr && (own.count == 0 || out.data != nullptr)), CommError,
              "{}: null buffer with {} elements", message_prefix(kind), in.count);
    do_reduce_scatter(in, out, op);
  });
}

void Communicator::all_gather(ConstBuffer in, Buffer out) {
  const Collective kind = Collective::kAllGather;
  const ShardRange own = shard_range(out.count, size_, rank_);
  const uint64_t shard = own.count * out.dtype.size();
  run(kind, static_cast<uint64_t>(size_ - 1) * shard, out.bytes() - shard, [&] {
    ZDP_CHECK(in.dtype == out.dtype, CommError, "{}: input dtype {} differs from output dtype {}", message_prefix(kind),
              in.dtype.name(), out.dtype.name());
    ZDP_CHECK(in.count == own.count, CommError,
              "{}: input has {} elements but this rank's shard of {} elements over {} ranks has {}",
              message_prefix(kind), in.count, out.count, size_, own.count);
    const Buffer own_out = out.slice(own.offset, own.count);
    ZDP_CHECK(!partially_overlaps(in.data, in.bytes(), out.data, out.bytes()) || own_out.data == in.data, CommError,
              "{}: input overlaps the output other than as this rank's own shard", message_prefix(kind));
    ZDP_CHECK(out.count == 0 || (out.data != nullptr && (own.count == 0 || in.data != nullptr)), CommError,
              "{}: null buffer with {} elements", message_prefix(kind), out.count);
    do_all_gather(in, out);
  });
}

void Communicator::broadcast(Buffer buf, int root) {
  const Collective kind = Collective::kBroadcast;
  const bool is_root = root == rank_;
  run(kind, is_root ? static_cast<uint64_t>(size_ - 1) * buf.bytes() : 0, is_root ? 0 : buf.bytes(), [&] {
    ZDP_CHECK(root >= 0 && root < size_, CommError, "{}: root {} is out of range for {} ranks", message_prefix(kind),
              root, size_);
    ZDP_CHECK(buf.count == 0 || buf.data != nullptr, CommError, "{}: null buffer with {} elements",
              message_prefix(kind), buf.count);
    do_broadcast(buf, root);
  });
}

void Communicator::all_gather_quantized(ConstBuffer in, Buffer out, QuantFormat f, std::span<std::byte> scratch,
                                        TensorStarts tensors, uint64_t key) {
  const Collective kind = Collective::kAllGather;
  const int n = size_;
  const std::vector<uint64_t> packed = packed_shard_bytes(out.count, n, f, tensors);
  uint64_t received = 0;
  for (int k = 0; k < n; ++k) received += k == rank_ ? 0 : packed[k];
  run(kind, static_cast<uint64_t>(n - 1) * packed[rank_], received, [&] {
    const ShardRange own = shard_range(out.count, n, rank_);
    ZDP_CHECK(f.codes != Quantization::kNone, CommError, "{}: a quantized all-gather needs int8 or int4",
              message_prefix(kind));
    ZDP_CHECK(in.dtype == out.dtype, CommError, "{}: input dtype {} differs from output dtype {}", message_prefix(kind),
              in.dtype.name(), out.dtype.name());
    ZDP_CHECK(in.count == own.count, CommError,
              "{}: input has {} elements but this rank's shard of {} elements over {} ranks has {}",
              message_prefix(kind), in.count, out.count, n, own.count);
    const Buffer own_out = out.slice(own.offset, own.count);
    ZDP_CHECK(!partially_overlaps(in.data, in.bytes(), out.data, out.bytes()) || own_out.data == in.data, CommError,
              "{}: input overlaps the output other than as this rank's own shard", message_prefix(kind));
    const uint64_t need = all_gather_quantized_scratch(out.count, n, f, tensors);
    ZDP_CHECK(scratch.size() >= need, CommError, "{}: scratch has {} bytes but {} {} elements over {} ranks need {}",
              message_prefix(kind), scratch.size(), out.count, quantization_name(f.codes), n, need);
    ZDP_CHECK(
        !overlaps(scratch.data(), need, in.data, in.bytes()) && !overlaps(scratch.data(), need, out.data, out.bytes()),
        CommError, "{}: scratch overlaps the input or the output", message_prefix(kind));
    // Rank k's packed shard lives at slot k; this rank fills its own.
    std::vector<std::span<std::byte>> slots(static_cast<size_t>(n));
    size_t at = 0;
    for (int k = 0; k < n; ++k) {
      slots[k] = scratch.subspan(at, packed[k]);
      at += packed[k];
    }
    quantize(in, shard_part(out.count, n, rank_, tensors), f, slots[rank_], key);
    const std::vector<std::span<const std::byte>> send(static_cast<size_t>(n), slots[rank_]);
    do_exchange({.kind = kind, .dtype = out.dtype, .count = out.count, .quant = f}, send, slots);
    for (int k = 0; k < n; ++k) {
      const PackedRange shard = shard_part(out.count, n, k, tensors);
      dequantize_into(slots[k], shard, f, out.slice(shard.offset, shard.count));
    }
  });
}

void Communicator::reduce_scatter_quantized(ConstBuffer in, Buffer out, ReduceOp op, QuantFormat f,
                                            std::span<std::byte> scratch, TensorStarts tensors, uint64_t key) {
  const Collective kind = Collective::kReduceScatter;
  const int n = size_;
  const std::vector<uint64_t> packed = packed_shard_bytes(in.count, n, f, tensors);
  uint64_t sent = 0;
  for (int k = 0; k < n; ++k) sent += k == rank_ ? 0 : packed[k];
  run(kind, sent, static_cast<uint64_t>(n - 1) * packed[rank_], [&] {
    const ShardRange own = shard_range(in.count, n, rank_);
    ZDP_CHECK(f.codes != Quantization::kNone, CommError, "{}: a quantized reduce-scatter needs int8 or int4",
              message_prefix(kind));
    ZDP_CHECK(op != ReduceOp::kMax, CommError, "{}: op max is not offered quantized; use sum or avg",
              message_prefix(kind));
    ZDP_CHECK(in.dtype == out.dtype, CommError, "{}: input dtype {} differs from output dtype {}", message_prefix(kind),
              in.dtype.name(), out.dtype.name());
    ZDP_CHECK(out.count == own.count, CommError,
              "{}: output has {} elements but this rank's shard of {} elements over {} ranks has {}",
              message_prefix(kind), out.count, in.count, n, own.count);
    const ConstBuffer own_in = in.slice(own.offset, own.count);
    ZDP_CHECK(!partially_overlaps(in.data, in.bytes(), out.data, out.bytes()) || own_in.data == out.data, CommError,
              "{}: output overlaps the input other than as this rank's own shard", message_prefix(kind));
    const uint64_t need = reduce_scatter_quantized_scratch(in.count, n, rank_, f, tensors);
    ZDP_CHECK(scratch.size() >= need, CommError, "{}: scratch has {} bytes but {} {} elements over {} ranks need {}",
              message_prefix(kind), scratch.size(), in.count, quantization_name(f.codes), n, need);
    ZDP_CHECK(
        !overlaps(scratch.data(), need, in.data, in.bytes()) && !overlaps(scratch.data(), need, out.data, out.bytes()),
        CommError, "{}: scratch overlaps the input or the output", message_prefix(kind));
    ZDP_CHECK(reinterpret_cast<uintptr_t>(scratch.data()) % alignof(float) == 0, CommError,
              "{}: scratch is not aligned for fp32", message_prefix(kind));
    // Scratch: fp32 chunks (N contributions and their sum), then this rank's
    // input packed per destination shard, then the N packed contributions
    // to its own shard.
    auto* chunks = reinterpret_cast<float*>(scratch.data());  // NOLINT: aligned (checked), holds fp32 chunks
    float* sum = chunks + static_cast<size_t>(n) * kReduceChunk;
    std::vector<std::span<const std::byte>> send(static_cast<size_t>(n));
    std::vector<std::span<std::byte>> recv(static_cast<size_t>(n));
    size_t at = sizeof(float) * (static_cast<size_t>(n) + 1) * kReduceChunk;
    for (int k = 0; k < n; ++k) {
      const PackedRange shard = shard_part(in.count, n, k, tensors);
      const std::span<std::byte> slot = scratch.subspan(at, packed[k]);
      quantize(in.slice(shard.offset, shard.count), shard, f, slot, key_for_rank(key, rank_));
      send[k] = slot;
      at += packed[k];
    }
    for (int k = 0; k < n; ++k) {
      recv[k] = scratch.subspan(at, packed[rank_]);
      at += packed[rank_];
    }
    do_exchange({.kind = kind, .dtype = in.dtype, .op = op, .count = in.count, .quant = f}, send, recv);
    // This rank's own contribution is its own packed slot, as a peer would get it.
    std::copy(send[rank_].begin(), send[rank_].end(), recv[rank_].begin());
    std::vector<const void*> ins(static_cast<size_t>(n));
    const PackedRange own_part = shard_part(in.count, n, rank_, tensors);
    for (size_t first = 0; first < own.count;) {
      const size_t len = whole_blocks(own_part, f, first, kReduceChunk);
      for (int k = 0; k < n; ++k) {
        float* part = chunks + static_cast<size_t>(k) * kReduceChunk;
        dequantize(recv[k], own_part, f, first, {part, len});
        ins[k] = part;
      }
      const Buffer dst = out.slice(first, len);
      if (out.dtype == Dtype::fp32()) {
        reduce_ordered(ins, dst.data, len, Dtype::fp32(), op);
      } else {
        reduce_ordered(ins, sum, len, Dtype::fp32(), op);
        convert(sum, Dtype::fp32(), dst.data, dst.dtype, len);
      }
      first += len;
    }
  });
}

void Communicator::barrier() {
  run(Collective::kBarrier, 0, 0, [&] { do_barrier(); });
}

double Communicator::all_reduce_scalar(double value, ReduceOp op) {
  double result = 0;
  const uint64_t bytes = static_cast<uint64_t>(size_ - 1) * sizeof(double);
  run(Collective::kScalarAllReduce, bytes, bytes, [&] { result = do_all_reduce_scalar(value, op); });
  return result;
}

uint64_t Communicator::all_reduce_uint64(uint64_t value, ReduceOp op) {
  const Collective kind = Collective::kIntAllReduce;
  uint64_t result = 0;
  const uint64_t bytes = static_cast<uint64_t>(size_ - 1) * sizeof(uint64_t);
  run(kind, bytes, bytes, [&] {
    ZDP_CHECK(op != ReduceOp::kAvg, CommError, "{}: op avg has no exact integer result; use sum or max",
              message_prefix(kind));
    std::vector<uint64_t> values(static_cast<size_t>(size_));
    do_all_reduce_uint64(value, op, values);
    const std::optional<uint64_t> reduced = reduce_uint64s(values, op);
    ZDP_CHECK(reduced.has_value(), CommError, "{}: the sum of the ranks' values exceeds 2^64 - 1",
              message_prefix(kind));
    result = *reduced;
  });
  return result;
}

void Communicator::all_gather_value_bytes(std::span<const std::byte> value, std::span<std::byte> out) {
  const Collective kind = Collective::kValueAllGather;
  // An all-gather of one value per rank: see stats.h.
  const uint64_t bytes = static_cast<uint64_t>(size_ - 1) * value.size();
  run(kind, bytes, bytes, [&] {
    ZDP_CHECK(out.size() == static_cast<size_t>(size_) * value.size(), CommError,
              "{}: the output has {} bytes but {} ranks' values of {} bytes need {}", message_prefix(kind), out.size(),
              size_, value.size(), static_cast<size_t>(size_) * value.size());
    const bool overlap =
        !value.empty() && value.data() < out.data() + out.size() && out.data() < value.data() + value.size();
    ZDP_CHECK(!overlap, CommError, "{}: the value overlaps the output", message_prefix(kind));
    ZDP_CHECK(value.empty() || (value.data() != nullptr && out.data() != nullptr), CommError,
              "{}: null buffer with {} bytes", message_prefix(kind), value.size());
    do_all_gather_value(value, out);
  });
}

}  // namespace zerodp::comm
