// SPDX-License-Identifier: Apache-2.0
#include "quantized_collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/quantize.h"
#include "comm/shard.h"
#include "core/aligned_buffer.h"
#include "core/convert.h"

namespace zerodp::comm::quantized {
namespace {

uint64_t fnv1a(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string fmt_case(const char* kind, size_t count, Dtype dtype, QuantFormat q) {
  return std::string(kind) + " of " + std::to_string(count) + " " + std::string(dtype.name()) + " as " +
         std::string(quantization_name(q.codes)) + " blocks of " + std::to_string(q.block);
}

// Rank `rank`'s input of `count` elements as fp32 values exactly
// representable in `dtype`: blocks of different magnitudes, signs mixed.
std::vector<float> input_of(int rank, size_t count, Dtype dtype, uint64_t salt) {
  std::mt19937_64 rng(salt * 7919 + static_cast<uint64_t>(rank) * 104729 + count);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) {
    const int exponent = static_cast<int>((i / 97 + static_cast<size_t>(rank)) % 9) - 4;
    x[i] = std::ldexp(u(rng), exponent);
  }
  std::vector<std::byte> typed(count * dtype.size());
  convert(x.data(), Dtype::fp32(), typed.data(), dtype, count);
  convert(typed.data(), dtype, x.data(), Dtype::fp32(), count);
  return x;
}

// x as `dtype` elements.
std::vector<std::byte> typed(const std::vector<float>& x, Dtype dtype) {
  std::vector<std::byte> out(x.size() * dtype.size());
  convert(x.data(), Dtype::fp32(), out.data(), dtype, x.size());
  return out;
}

// The pieces of elements [offset, offset + count) of a buffer whose tensors
// start at `tensors`: the range cut at every tensor start inside it, as
// {first, n} relative to offset.
std::vector<std::pair<size_t, size_t>> pieces_of(size_t offset, size_t count, const std::vector<uint64_t>& tensors) {
  std::vector<size_t> cuts = {0};
  for (const uint64_t t : tensors) {
    if (t > offset && t < offset + count) cuts.push_back(t - offset);
  }
  cuts.push_back(count);
  std::vector<std::pair<size_t, size_t>> pieces;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (cuts[i + 1] > cuts[i]) pieces.emplace_back(cuts[i], cuts[i + 1] - cuts[i]);
  }
  return pieces;
}

// What a packed slice (elements [offset, offset + n) of the buffer)
// dequantizes to, in fp32: each of its pieces through the one-tensor path.
std::vector<float> through_the_link(const float* x, size_t offset, size_t n, QuantFormat q,
                                    const std::vector<uint64_t>& tensors) {
  std::vector<float> back(n);
  for (const auto& [first, len] : pieces_of(offset, n, tensors)) {
    std::vector<std::byte> packed(quantized_bytes(len, q));
    quantize(ConstBuffer(x + first, len, Dtype::fp32()), q, packed);
    dequantize(packed, len, q, 0, std::span<float>(back.data() + first, len));
  }
  return back;
}

// The contract's order: the largest power-of-two prefix, then the rest.
float pairwise(const std::vector<std::vector<float>>& parts, size_t i, size_t lo, size_t n) {
  if (n == 1) return parts[lo][i];
  size_t prefix = 1;
  while (prefix * 2 < n) prefix *= 2;
  return pairwise(parts, i, lo, prefix) + pairwise(parts, i, lo + prefix, n - prefix);
}

uint64_t packed_bytes(size_t count, int ranks, int rank, QuantFormat q, const std::vector<uint64_t>& tensors) {
  const ShardRange shard = shard_range(count, ranks, rank);
  const uint64_t c = shard.count;
  // The formula of docs/comm.md, written out: 4 bytes per block of each
  // piece plus the codes.
  uint64_t blocks = 0;
  for (const auto& piece : pieces_of(shard.offset, c, tensors)) blocks += (piece.second + q.block - 1) / q.block;
  const uint64_t codes = q.codes == Quantization::kInt8 ? c : (c + 1) / 2;
  return 4 * blocks + codes;
}

uint64_t check_reduce_scatter(Communicator& comm, size_t count, Dtype dtype, QuantFormat q, ReduceOp op, bool in_place,
                              uint64_t hash, const std::vector<uint64_t>& tensors = {}) {
  const int n = comm.size(), me = comm.rank();
  const std::string what = fmt_case("reduce_scatter", count, dtype, q) + (op == ReduceOp::kAvg ? " avg" : " sum") +
                           (in_place ? " in place" : "") + " with " + std::to_string(tensors.size()) + " tensor starts";
  const ShardRange own = shard_range(count, n, me);
  std::vector<std::byte> in = typed(input_of(me, count, dtype, 1), dtype);
  std::vector<std::byte> separate(own.count * dtype.size());
  const Buffer out = in_place ? Buffer(in.data() + own.offset * dtype.size(), own.count, dtype)
                              : Buffer(separate.data(), own.count, dtype);
  AlignedBuffer<std::byte> scratch(reduce_scatter_quantized_scratch(count, n, me, q, tensors));
  const CommStats before = comm.stats();
  comm.reduce_scatter_quantized(ConstBuffer(in.data(), count, dtype), out, op, q, scratch.span(), tensors);
  const CollectiveStats s = (comm.stats() - before)[Collective::kReduceScatter];
  // The reference: every contribution to this rank's shard through the link.
  std::vector<std::vector<float>> parts;
  for (int k = 0; k < n; ++k) {
    const std::vector<float> x = input_of(k, count, dtype, 1);
    parts.push_back(through_the_link(x.data() + own.offset, own.offset, own.count, q, tensors));
  }
  std::vector<float> expected(own.count);
  for (size_t i = 0; i < own.count; ++i) {
    float acc = pairwise(parts, i, 0, static_cast<size_t>(n));
    if (op == ReduceOp::kAvg) acc /= static_cast<float>(n);
    expected[i] = acc;
  }
  const std::vector<std::byte> want = typed(expected, dtype);
  // An empty shard (fewer elements than ranks) has no data pointer to compare.
  if (!want.empty()) {
    EXPECT_EQ(std::memcmp(want.data(), out.data, want.size()), 0) << what << ": result differs from the reference";
  }
  uint64_t sent = 0;
  for (int k = 0; k < n; ++k) sent += k == me ? 0 : packed_bytes(count, n, k, q, tensors);
  EXPECT_EQ(s.calls, 1u) << what;
  EXPECT_EQ(s.bytes_sent, sent) << what;
  EXPECT_EQ(s.bytes_received, static_cast<uint64_t>(n - 1) * packed_bytes(count, n, me, q, tensors)) << what;
  return fnv1a(hash, out.data, out.bytes());
}

uint64_t check_all_gather(Communicator& comm, size_t count, Dtype dtype, QuantFormat q, bool in_place, uint64_t hash,
                          const std::vector<uint64_t>& tensors = {}) {
  const int n = comm.size(), me = comm.rank();
  const std::string what = fmt_case("all_gather", count, dtype, q) + (in_place ? " in place" : "") + " with " +
                           std::to_string(tensors.size()) + " tensor starts";
  const ShardRange own = shard_range(count, n, me);
  const std::vector<float> full = input_of(0, count, dtype, 2);  // the shards, as every rank knows them
  std::vector<std::byte> out(count * dtype.size());
  std::vector<std::byte> mine =
      typed(std::vector<float>(full.begin() + own.offset, full.begin() + own.offset + own.count), dtype);
  ConstBuffer in(mine.data(), own.count, dtype);
  if (in_place) {
    std::copy(mine.begin(), mine.end(), out.begin() + own.offset * dtype.size());
    in = ConstBuffer(out.data() + own.offset * dtype.size(), own.count, dtype);
  }
  AlignedBuffer<std::byte> scratch(all_gather_quantized_scratch(count, n, q, tensors));
  const CommStats before = comm.stats();
  comm.all_gather_quantized(in, Buffer(out.data(), count, dtype), q, scratch.span(), tensors);
  const CollectiveStats s = (comm.stats() - before)[Collective::kAllGather];
  std::vector<float> expected(count);
  for (int k = 0; k < n; ++k) {
    const ShardRange shard = shard_range(count, n, k);
    const std::vector<float> back = through_the_link(full.data() + shard.offset, shard.offset, shard.count, q, tensors);
    std::copy(back.begin(), back.end(), expected.begin() + shard.offset);
  }
  const std::vector<std::byte> want = typed(expected, dtype);
  EXPECT_EQ(want, out) << what << ": result differs from the reference";
  uint64_t received = 0;
  for (int k = 0; k < n; ++k) received += k == me ? 0 : packed_bytes(count, n, k, q, tensors);
  EXPECT_EQ(s.calls, 1u) << what;
  EXPECT_EQ(s.bytes_sent, static_cast<uint64_t>(n - 1) * packed_bytes(count, n, me, q, tensors)) << what;
  EXPECT_EQ(s.bytes_received, received) << what;
  return fnv1a(hash, out.data(), out.size());
}

}  // namespace

uint64_t check_quantized_collectives(Communicator& c) {
  const int n = c.size();
  uint64_t hash = 1469598103934665603ull;
  std::vector<size_t> counts = {1, 300, 1009, 5000};
  if (n > 2) counts.push_back(static_cast<size_t>(n - 1));
  for (const size_t count : counts) {
    for (const Dtype dtype : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
      // The default block with both code widths, and the smallest and largest blocks offered.
      for (const QuantFormat q : {QuantFormat{.codes = Quantization::kInt8}, QuantFormat{.codes = Quantization::kInt4},
                                  QuantFormat{.codes = Quantization::kInt8, .block = kMinQuantBlock},
                                  QuantFormat{.codes = Quantization::kInt4, .block = kMaxQuantBlock}}) {
        hash = check_all_gather(c, count, dtype, q, /*in_place=*/false, hash);
        hash = check_reduce_scatter(c, count, dtype, q, ReduceOp::kSum, /*in_place=*/false, hash);
      }
    }
  }
  // In place, the average, and a count whose shards span several of the
  // reduce-scatter's fp32 chunks.
  const QuantFormat i8{.codes = Quantization::kInt8};
  hash = check_all_gather(c, 1009, Dtype::bf16(), i8, /*in_place=*/true, hash);
  hash = check_reduce_scatter(c, 1009, Dtype::fp32(), i8, ReduceOp::kSum, /*in_place=*/true, hash);
  hash = check_reduce_scatter(c, 1009, Dtype::bf16(), i8, ReduceOp::kAvg, /*in_place=*/false, hash);
  hash = check_reduce_scatter(c, kReduceChunk * 2 * static_cast<size_t>(n) + 77, Dtype::fp32(), i8, ReduceOp::kSum,
                              /*in_place=*/false, hash);
  hash = check_reduce_scatter(c, kReduceChunk * 2 * static_cast<size_t>(n) + 77, Dtype::bf16(),
                              {.codes = Quantization::kInt8, .block = 64}, ReduceOp::kSum, /*in_place=*/false, hash);
  // Blocks end at tensor starts: a tensor of one element, two starting
  // together (an empty tensor), starts inside and on shard edges, and a
  // buffer spanning several fp32 chunks whose pieces do not align with them.
  const std::vector<uint64_t> tensors = {0, 1, 300, 300, 301, 504, 777, 1000};
  for (const QuantFormat q : {i8, QuantFormat{.codes = Quantization::kInt4, .block = kMinQuantBlock}}) {
    hash = check_all_gather(c, 1009, Dtype::bf16(), q, /*in_place=*/false, hash, tensors);
    hash = check_reduce_scatter(c, 1009, Dtype::fp32(), q, ReduceOp::kSum, /*in_place=*/false, hash, tensors);
  }
  const size_t big = kReduceChunk * 2 * static_cast<size_t>(n) + 77;
  const std::vector<uint64_t> big_tensors = {0, 1000, 3001, 3005, 4100, big - 3};
  hash = check_reduce_scatter(c, big, Dtype::bf16(), {.codes = Quantization::kInt8, .block = kMaxQuantBlock},
                              ReduceOp::kSum, /*in_place=*/false, hash, big_tensors);
  hash = check_reduce_scatter(c, big, Dtype::fp32(), {.codes = Quantization::kInt8, .block = 64}, ReduceOp::kAvg,
                              /*in_place=*/true, hash, big_tensors);
  return hash;
}

}  // namespace zerodp::comm::quantized
