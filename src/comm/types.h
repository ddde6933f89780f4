// SPDX-License-Identifier: Apache-2.0
// The value types every collective takes: the reduction operator, the kind of
// collective (for statistics and error messages), and typed views of caller
// memory (Buffer, ConstBuffer) over fp32, fp16 or bf16 elements.
//
// Buffers do not own memory; the caller keeps it alive for the duration of
// the call. Thread-safety: plain values.
#pragma once

#include <bit>
#include <cstddef>
#include <span>
#include <string_view>

#include "core/dtype.h"

namespace zerodp::comm {

// The one quiet NaN that a sum or a dequantised value that came out NaN
// becomes: which payload an operation on NaNs keeps is the compiler's choice
// (operand order), and the result must not depend on how a kernel was
// compiled (reduce.cc, quantize.cc).
inline constexpr float kCanonicalNan = std::bit_cast<float>(0x7FC00000u);

// kSum and kAvg add contributions in rank order 0..N-1 in fp32 (low-precision
// inputs are widened first) and round once to the buffer's dtype; kAvg divides
// the fp32 sum by N before that rounding; a NaN sum is the canonical quiet
// NaN (fp32 0x7FC00000). kMax keeps the first NaN in rank
// order, otherwise the largest value (ties keep the lower rank's value, which
// matters only for -0 vs +0).
enum class ReduceOp { kSum, kAvg, kMax };

// One entry per collective, used to index CommStats and to name the
// collective in errors. kScalarAllReduce is all_reduce_scalar (fp64),
// kValueAllGather is all_gather_value (a small value of any trivially
// copyable type, as bytes), kIntAllReduce is all_reduce_uint64. New kinds go
// at the end: the MPI backend carries the kind in 3 bits of a message tag.
enum class Collective {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kBarrier,
  kScalarAllReduce,
  kValueAllGather,
  kIntAllReduce
};
inline constexpr int kNumCollectives = 8;

std::string_view reduce_op_name(ReduceOp op);
// "all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier",
// "all_reduce_scalar", "all_gather_value", "all_reduce_uint64".
std::string_view collective_name(Collective kind);

struct Buffer;

// A read-only typed view: count elements of dtype at data.
struct ConstBuffer {
  const void* data = nullptr;
  size_t count = 0;
  Dtype dtype = Dtype::fp32();

  ConstBuffer() = default;
  ConstBuffer(const void* data_in, size_t count_in, Dtype dtype_in) : data(data_in), count(count_in), dtype(dtype_in) {}
  ConstBuffer(std::span<const float> s) : ConstBuffer(s.data(), s.size(), Dtype::fp32()) {}     // NOLINT
  ConstBuffer(std::span<const Half> s) : ConstBuffer(s.data(), s.size(), Dtype::fp16()) {}      // NOLINT
  ConstBuffer(std::span<const BFloat16> s) : ConstBuffer(s.data(), s.size(), Dtype::bf16()) {}  // NOLINT
  ConstBuffer(std::span<float> s) : ConstBuffer(s.data(), s.size(), Dtype::fp32()) {}           // NOLINT
  ConstBuffer(std::span<Half> s) : ConstBuffer(s.data(), s.size(), Dtype::fp16()) {}            // NOLINT
  ConstBuffer(std::span<BFloat16> s) : ConstBuffer(s.data(), s.size(), Dtype::bf16()) {}        // NOLINT

  size_t bytes() const { return count * dtype.size(); }
  const std::byte* byte_data() const { return static_cast<const std::byte*>(data); }
  // Elements [offset, offset + n); REQUIRES offset + n <= count.
  ConstBuffer slice(size_t offset, size_t n) const { return {byte_data() + offset * dtype.size(), n, dtype}; }
};

// A writable typed view: count elements of dtype at data.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;
  Dtype dtype = Dtype::fp32();

  Buffer() = default;
  Buffer(void* data_in, size_t count_in, Dtype dtype_in) : data(data_in), count(count_in), dtype(dtype_in) {}
  Buffer(std::span<float> s) : Buffer(s.data(), s.size(), Dtype::fp32()) {}     // NOLINT
  Buffer(std::span<Half> s) : Buffer(s.data(), s.size(), Dtype::fp16()) {}      // NOLINT
  Buffer(std::span<BFloat16> s) : Buffer(s.data(), s.size(), Dtype::bf16()) {}  // NOLINT

  operator ConstBuffer() const { return {data, count, dtype}; }  // NOLINT: a view, by design
  size_t bytes() const { return count * dtype.size(); }
  std::byte* byte_data() const { return static_cast<std::byte*>(data); }
  Buffer slice(size_t offset, size_t n) const { return {byte_data() + offset * dtype.size(), n, dtype}; }
};

}  // namespace zerodp::comm
