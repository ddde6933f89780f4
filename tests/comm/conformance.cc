// SPDX-License-Identifier: Apache-2.0
#include "conformance.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "comm/shard.h"
#include "core/aligned_buffer.h"

namespace zerodp::comm::conformance {
namespace {

constexpr size_t kPrime = 1009;
constexpr size_t kBig = (size_t{1} << 20) + 3;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float round_to(Dtype d, float f) {
  switch (d.kind()) {
    case Dtype::Kind::kFp32:
      return f;
    case Dtype::Kind::kFp16:
      return half_to_float(float_to_half(f));
    case Dtype::Kind::kBf16:
      return bfloat16_to_float(float_to_bfloat16(f));
  }
  return f;
}

uint32_t to_bits(Dtype d, float f) {
  switch (d.kind()) {
    case Dtype::Kind::kFp32:
      return std::bit_cast<uint32_t>(f);
    case Dtype::Kind::kFp16:
      return float_to_half(f).bits;
    case Dtype::Kind::kBf16:
      return float_to_bfloat16(f).bits;
  }
  return 0;
}

uint32_t load_bits(const std::byte* p, Dtype d, size_t i) {
  if (d.size() == 4) {
    uint32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, p + i * 2, 2);
  return v;
}

void store(std::byte* p, Dtype d, size_t i, float f) {
  const uint32_t bits = to_bits(d, f);
  if (d.size() == 4) {
    std::memcpy(p + i * 4, &bits, 4);
  } else {
    const auto v = static_cast<uint16_t>(bits);
    std::memcpy(p + i * 2, &v, 2);
  }
}

// Rank r's input element i: exactly representable in d.
float value(int rank, size_t i, Dtype d, Data data) {
  const uint64_t h = splitmix64((static_cast<uint64_t>(rank) << 40) ^ (i * 0x2545F4914F6CDD1Dull) ^
                                (static_cast<uint64_t>(d.kind()) << 56));
  if (data == Data::kExact) {
    // |m| * 2^-3 ... with every partial sum of <= 8 values exact in fp32.
    const int64_t range = d == Dtype::fp32() ? (1 << 17) : d == Dtype::fp16() ? 1024 : 128;
    const int64_t m = static_cast<int64_t>(h % static_cast<uint64_t>(2 * range + 1)) - range;
    static constexpr float kScale[4] = {1.0f, 0.5f, 0.25f, 0.125f};
    return static_cast<float>(m) * kScale[(h >> 32) & 3];  // exact: a power of two
  }
  static constexpr float kPow2[16] = {0x1p-8f, 0x1p-7f, 0x1p-6f, 0x1p-5f, 0x1p-4f, 0x1p-3f, 0x1p-2f, 0x1p-1f,
                                      0x1p0f,  0x1p1f,  0x1p2f,  0x1p3f,  0x1p4f,  0x1p5f,  0x1p6f,  0x1p7f};
  const float u = static_cast<float>(h >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  return round_to(d, u * kPow2[(h >> 8) & 15]);
}

template <typename T>
T max_rule(T acc, T x) {
  if (acc != acc) return acc;
  return (x > acc || x != x) ? x : acc;
}

struct Reference {
  uint32_t bits;
  double exact;    // fp64 value of the reduction (for the tolerance check)
  double abs_sum;  // sum of |contributions|
};

// The documented pairwise order, written out recursively: the largest
// power-of-two prefix, then the rest.
float pairwise(const std::vector<float>& v, size_t lo, size_t n) {
  if (n == 1) return v[lo];
  size_t prefix = 1;
  while (prefix * 2 < n) prefix *= 2;
  return pairwise(v, lo, prefix) + pairwise(v, lo + prefix, n - prefix);
}

Reference reference(ReduceOp op, int n, size_t i, Dtype d, Data data) {
  double sum = 0, abs_sum = 0;
  double max_d = 0;
  float acc = 0;
  std::vector<float> values;
  for (int k = 0; k < n; ++k) {
    const float v = value(k, i, d, data);
    values.push_back(v);
    sum += v;
    abs_sum += std::fabs(v);
    max_d = k == 0 ? v : std::max(max_d, static_cast<double>(v));
    acc = k == 0 ? v : max_rule(acc, v);
  }
  if (op != ReduceOp::kMax) acc = pairwise(values, 0, values.size());
  if (op == ReduceOp::kAvg) acc = acc / static_cast<float>(n);
  const double exact = op == ReduceOp::kMax ? max_d : op == ReduceOp::kAvg ? sum / n : sum;
  if (data == Data::kExact) {
    // fp64 reference: the exact value, rounded the documented way (an exact
    // fp32 sum; kAvg's fp32 division equals rounding the fp64 quotient).
    return {to_bits(d, static_cast<float>(exact)), exact, abs_sum};
  }
  return {to_bits(d, acc), exact, abs_sum};
}

// Which rank's shard holds element i.
int owner(size_t count, int n, size_t i) {
  const size_t base = count / static_cast<size_t>(n);
  const size_t extra = count % static_cast<size_t>(n);
  if (i < extra * (base + 1)) return static_cast<int>(i / (base + 1));
  return static_cast<int>(extra + (i - extra * (base + 1)) / base);
}

uint64_t fnv1a(const std::byte* p, size_t bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 0x100000001B3ull;
  return h;
}

// Compares out[j] for j in [0, n) with expected(global index offset + j);
// reports the count and the first mismatch.
template <typename Expected>
void check_output(const Communicator& comm, const Case& c, const std::byte* out, size_t n, size_t offset,
                  Expected&& expected) {
  size_t mismatches = 0;
  size_t first = 0;
  uint32_t first_got = 0, first_want = 0;
  for (size_t j = 0; j < n; ++j) {
    const uint32_t got = load_bits(out, c.dtype, j);
    const uint32_t want = expected(offset + j);
    if (got != want) {
      if (mismatches == 0) {
        first = offset + j;
        first_got = got;
        first_want = want;
      }
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u) << case_name(c) << " rank " << comm.rank() << ": first mismatch at element " << first
                            << ": got bits 0x" << std::hex << first_got << ", want 0x" << first_want;
}

ReduceOp op_of(CaseKind kind) {
  switch (kind) {
    case CaseKind::kAllReduceAvg:
    case CaseKind::kReduceScatterAvg:
      return ReduceOp::kAvg;
    case CaseKind::kAllReduceMax:
      return ReduceOp::kMax;
    default:
      return ReduceOp::kSum;
  }
}

const char* kind_name(CaseKind kind) {
  switch (kind) {
    case CaseKind::kAllReduceSum:
      return "all_reduce_sum";
    case CaseKind::kAllReduceAvg:
      return "all_reduce_avg";
    case CaseKind::kAllReduceMax:
      return "all_reduce_max";
    case CaseKind::kAllReduceInPlace:
      return "all_reduce_in_place";
    case CaseKind::kReduceScatterSum:
      return "reduce_scatter_sum";
    case CaseKind::kReduceScatterAvg:
      return "reduce_scatter_avg";
    case CaseKind::kReduceScatterInPlace:
      return "reduce_scatter_in_place";
    case CaseKind::kAllGather:
      return "all_gather";
    case CaseKind::kAllGatherInPlace:
      return "all_gather_in_place";
    case CaseKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

}  // namespace

std::string case_name(const Case& c) {
  return fmt::format("{}_{}_{}_{}", kind_name(c.kind), c.dtype.name(), c.count,
                     c.data == Data::kExact ? "exact" : "random");
}

void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

std::vector<Case> cases_for(int n, bool big) {
  const CaseKind all_kinds[] = {CaseKind::kAllReduceSum,         CaseKind::kAllReduceAvg,
                                CaseKind::kAllReduceMax,         CaseKind::kAllReduceInPlace,
                                CaseKind::kReduceScatterSum,     CaseKind::kReduceScatterAvg,
                                CaseKind::kReduceScatterInPlace, CaseKind::kAllGather,
                                CaseKind::kAllGatherInPlace,     CaseKind::kBroadcast};
  const CaseKind big_kinds[] = {CaseKind::kAllReduceSum, CaseKind::kAllReduceAvg, CaseKind::kReduceScatterSum,
                                CaseKind::kAllGather};
  std::vector<Case> cases;
  for (Dtype d : {Dtype::fp32(), Dtype::fp16(), Dtype::bf16()}) {
    for (CaseKind k : all_kinds) {
      cases.push_back({k, d, 1, Data::kExact});
      if (n > 2) cases.push_back({k, d, static_cast<size_t>(n - 1), Data::kExact});
      if (n == 1) cases.push_back({k, d, 0, Data::kExact});  // n - 1 = 0: the empty buffer
      cases.push_back({k, d, kPrime, Data::kRandom});
    }
    if (big) {
      for (CaseKind k : big_kinds) cases.push_back({k, d, kBig, Data::kExact});
    }
  }
  return cases;
}

std::vector<Case> big_mpi_cases() {
  return {{CaseKind::kAllReduceSum, Dtype::fp32(), kBig, Data::kExact},
          {CaseKind::kReduceScatterAvg, Dtype::bf16(), kBig, Data::kExact},
          {CaseKind::kAllGather, Dtype::fp16(), kBig, Data::kExact}};
}

uint64_t run_case(Communicator& comm, const Case& c) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t esize = c.dtype.size();
  const ShardRange own = shard_range(c.count, n, r);
  const ReduceOp op = op_of(c.kind);
  // One extra element so even empty buffers have a valid address.
  AlignedBuffer<std::byte> in((c.count + 1) * esize);
  AlignedBuffer<std::byte> out((c.count + 1) * esize);
  const CommStats before = comm.stats();
  const uint64_t full_bytes = c.count * esize;
  const uint64_t shard_bytes = own.count * esize;
  const uint64_t peers = static_cast<uint64_t>(n - 1);
  uint64_t want_sent = 0, want_received = 0;
  Collective kind = Collective::kAllReduce;
  const std::byte* result = out.data();
  size_t result_count = c.count;
  size_t result_offset = 0;

  auto reduced = [&](size_t i) {
    const Reference ref = reference(op, n, i, c.dtype, c.data);
    return ref.bits;
  };

  switch (c.kind) {
    case CaseKind::kAllReduceSum:
    case CaseKind::kAllReduceAvg:
    case CaseKind::kAllReduceMax:
    case CaseKind::kAllReduceInPlace: {
      for (size_t i = 0; i < c.count; ++i) store(in.data(), c.dtype, i, value(r, i, c.dtype, c.data));
      const bool in_place = c.kind == CaseKind::kAllReduceInPlace;
      Buffer dst(in_place ? in.data() : out.data(), c.count, c.dtype);
      comm.all_reduce(ConstBuffer(in.data(), c.count, c.dtype), dst, op);
      result = dst.byte_data();
      kind = Collective::kAllReduce;
      want_sent = want_received = (full_bytes - shard_bytes) + peers * shard_bytes;
      check_output(comm, c, result, c.count, 0, reduced);
      break;
    }
    case CaseKind::kReduceScatterSum:
    case CaseKind::kReduceScatterAvg:
    case CaseKind::kReduceScatterInPlace: {
      for (size_t i = 0; i < c.count; ++i) store(in.data(), c.dtype, i, value(r, i, c.dtype, c.data));
      const bool in_place = c.kind == CaseKind::kReduceScatterInPlace;
      Buffer dst(in_place ? in.data() + own.offset * esize : out.data(), own.count, c.dtype);
      comm.reduce_scatter(ConstBuffer(in.data(), c.count, c.dtype), dst, op);
      result = dst.byte_data();
      result_count = own.count;
      result_offset = own.offset;
      kind = Collective::kReduceScatter;
      want_sent = full_bytes - shard_bytes;
      want_received = peers * shard_bytes;
      check_output(comm, c, result, own.count, own.offset, reduced);
      if (c.data == Data::kRandom) {
        // The fp64 sanity bound: the ordered fp32 sum and one rounding stay
        // close to the exact sum.
        const double unit = c.dtype == Dtype::fp32() ? 0x1p-23 : c.dtype == Dtype::fp16() ? 0x1p-10 : 0x1p-7;
        for (size_t j = 0; j < own.count; ++j) {
          const Reference ref = reference(op, n, own.offset + j, c.dtype, c.data);
          float got;
          if (esize == 4) {
            std::memcpy(&got, result + j * 4, 4);
          } else {
            got = c.dtype == Dtype::fp16()
                      ? half_to_float(Half{static_cast<uint16_t>(load_bits(result, c.dtype, j))})
                      : bfloat16_to_float(BFloat16{static_cast<uint16_t>(load_bits(result, c.dtype, j))});
          }
          const double tol = ref.abs_sum * n * 0x1p-23 + std::fabs(ref.exact) * unit;
          if (!(std::fabs(got - ref.exact) <= tol)) {
            ADD_FAILURE() << case_name(c) << " element " << own.offset + j << ": " << got << " is not within " << tol
                          << " of the fp64 sum " << ref.exact;
            break;
          }
        }
      }
      break;
    }
    case CaseKind::kAllGather:
    case CaseKind::kAllGatherInPlace: {
      const bool in_place = c.kind == CaseKind::kAllGatherInPlace;
      std::byte* src = in_place ? out.data() + own.offset * esize : in.data();
      for (size_t j = 0; j < own.count; ++j) store(src, c.dtype, j, value(r, own.offset + j, c.dtype, c.data));
      comm.all_gather(ConstBuffer(src, own.count, c.dtype), Buffer(out.data(), c.count, c.dtype));
      kind = Collective::kAllGather;
      want_sent = peers * shard_bytes;
      want_received = full_bytes - shard_bytes;
      check_output(comm, c, out.data(), c.count, 0,
                   [&](size_t i) { return to_bits(c.dtype, value(owner(c.count, n, i), i, c.dtype, c.data)); });
      break;
    }
    case CaseKind::kBroadcast: {
      const int root = static_cast<int>(c.count % static_cast<size_t>(n));
      for (size_t i = 0; i < c.count; ++i) store(out.data(), c.dtype, i, value(r, i, c.dtype, c.data));
      comm.broadcast(Buffer(out.data(), c.count, c.dtype), root);
      kind = Collective::kBroadcast;
      want_sent = r == root ? peers * full_bytes : 0;
      want_received = r == root ? 0 : full_bytes;
      check_output(comm, c, out.data(), c.count, 0,
                   [&](size_t i) { return to_bits(c.dtype, value(root, i, c.dtype, c.data)); });
      break;
    }
  }
  const CommStats delta = comm.stats() - before;
  EXPECT_EQ(delta.total_calls(), 1u) << case_name(c);
  EXPECT_EQ(delta[kind].calls, 1u) << case_name(c);
  EXPECT_EQ(delta[kind].bytes_sent, want_sent) << case_name(c) << " rank " << r;
  EXPECT_EQ(delta[kind].bytes_received, want_received) << case_name(c) << " rank " << r;
  (void)result_offset;
  return fnv1a(result, result_count * esize);
}

}  // namespace zerodp::comm::conformance
