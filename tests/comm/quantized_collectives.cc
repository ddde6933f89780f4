// SPDX-License-Identifier: Apache-2.0
#include "quantized_collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
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

// What a packed slice dequantizes to, in fp32.
std::vector<float> through_the_link(const float* x, size_t n, QuantFormat q) {
  std::vector<std::byte> packed(quantized_bytes(n, q));
  quantize(ConstBuffer(x, n, Dtype::fp32()), q, packed);
  std::vector<float> back(n);
  dequantize(packed, n, q, 0, back);
  return back;
}

// The contract's order: the largest power-of-two prefix, then the rest.
float pairwise(const std::vector<std::vector<float>>& parts, size_t i, size_t lo, size_t n) {
  if (n == 1) return parts[lo][i];
  size_t prefix = 1;
  while (prefix * 2 < n) prefix *= 2;
  return pairwise(parts, i, lo, prefix) + pairwise(parts, i, lo + prefix, n - prefix);
}

uint64_t packed_bytes(size_t count, int ranks, int rank, QuantFormat q) {
  const uint64_t c = shard_range(count, ranks, rank).count;
  // The formula of docs/comm.md, written out: 4 bytes per block plus the codes.
  const uint64_t codes = q.codes == Quantization::kInt8 ? c : (c + 1) / 2;
  return 4 * ((c + q.block - 1) / q.block) + codes;
}

uint64_t check_reduce_scatter(Communicator& comm, size_t count, Dtype dtype, QuantFormat q, ReduceOp op, bool in_place,
                              uint64_t hash) {
  const int n = comm.size(), me = comm.rank();
  const std::string what = fmt_case("reduce_scatter", count, dtype, q) + (op == ReduceOp::kAvg ? " avg" : " sum") +
                           (in_place ? " in place" : "");
  const ShardRange own = shard_range(count, n, me);
  std::vector<std::byte> in = typed(input_of(me, count, dtype, 1), dtype);
  std::vector<std::byte> separate(own.count * dtype.size());
  const Buffer out = in_place ? Buffer(in.data() + own.offset * dtype.size(), own.count, dtype)
                              : Buffer(separate.data(), own.count, dtype);
  AlignedBuffer<std::byte> scratch(reduce_scatter_quantized_scratch(count, n, me, q));
  const CommStats before = comm.stats();
  comm.reduce_scatter_quantized(ConstBuffer(in.data(), count, dtype), out, op, q, scratch.span());
  const CollectiveStats s = (comm.stats() - before)[Collective::kReduceScatter];
  // The reference: every contribution to this rank's shard through the link.
  std::vector<std::vector<float>> parts;
  for (int k = 0; k < n; ++k) {
    const std::vector<float> x = input_of(k, count, dtype, 1);
    parts.push_back(through_the_link(x.data() + own.offset, own.count, q));
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
  for (int k = 0; k < n; ++k) sent += k == me ? 0 : packed_bytes(count, n, k, q);
  EXPECT_EQ(s.calls, 1u) << what;
  EXPECT_EQ(s.bytes_sent, sent) << what;
  EXPECT_EQ(s.bytes_received, static_cast<uint64_t>(n - 1) * packed_bytes(count, n, me, q)) << what;
  return fnv1a(hash, out.data, out.bytes());
}

uint64_t check_all_gather(Communicator& comm, size_t count, Dtype dtype, QuantFormat q, bool in_place, uint64_t hash) {
  const int n = comm.size(), me = comm.rank();
  const std::string what = fmt_case("all_gather", count, dtype, q) + (in_place ? " in place" : "");
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
  AlignedBuffer<std::byte> scratch(all_gather_quantized_scratch(count, n, q));
  const CommStats before = comm.stats();
  comm.all_gather_quantized(in, Buffer(out.data(), count, dtype), q, scratch.span());
  const CollectiveStats s = (comm.stats() - before)[Collective::kAllGather];
  std::vector<float> expected(count);
  for (int k = 0; k < n; ++k) {
    const ShardRange shard = shard_range(count, n, k);
    const std::vector<float> back = through_the_link(full.data() + shard.offset, shard.count, q);
    std::copy(back.begin(), back.end(), expected.begin() + shard.offset);
  }
  const std::vector<std::byte> want = typed(expected, dtype);
  EXPECT_EQ(want, out) << what << ": result differs from the reference";
  uint64_t received = 0;
  for (int k = 0; k < n; ++k) received += k == me ? 0 : packed_bytes(count, n, k, q);
  EXPECT_EQ(s.calls, 1u) << what;
  EXPECT_EQ(s.bytes_sent, static_cast<uint64_t>(n - 1) * packed_bytes(count, n, me, q)) << what;
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
  return hash;
}

}  // namespace zerodp::comm::quantized
