// SPDX-License-Identifier: Apache-2.0
#include "small_values.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace zerodp::comm::small_values {
namespace {

constexpr uint64_t kTwo53 = uint64_t{1} << 53;

// Several fields of different types and no padding (24 bytes).
struct Record {
  uint64_t id = 0;
  double x = 0;
  int32_t a = 0;
  uint16_t b = 0;
  char tag[2] = {};
};
static_assert(sizeof(Record) == 24, "Record has no padding");

Record record_of(int rank) {
  Record r;
  r.id = std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(rank);  // far above 2^53
  // -0.0 on rank 0 and a NaN with a payload on rank 1: bits, not values, must travel.
  r.x = rank == 0 ? -0.0 : rank == 1 ? std::bit_cast<double>(uint64_t{0x7FF800000000BEEF}) : rank + 0.1;
  r.a = -1000 * rank - 7;
  r.b = static_cast<uint16_t>(0xFFFF - rank);
  r.tag[0] = static_cast<char>('a' + rank % 26);
  r.tag[1] = static_cast<char>('A' + rank % 26);
  return r;
}

}  // namespace

void check_small_values(Communicator& c) {
  const int n = c.size();
  const int me = c.rank();
  const uint64_t peers = static_cast<uint64_t>(n - 1);
  uint64_t gathered_bytes = 0;  // per rank, summed over the all_gather_value calls

  // Integers above 2^53 in rank order: 2^53 + 1 + rank is not a double.
  const std::vector<uint64_t> ids = c.all_gather_value(kTwo53 + 1 + static_cast<uint64_t>(me));
  gathered_bytes += sizeof(uint64_t);
  ASSERT_EQ(ids.size(), static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) EXPECT_EQ(ids[k], kTwo53 + 1 + static_cast<uint64_t>(k)) << "rank " << k;

  // 32-bit values (CRCs) and single bytes.
  const std::vector<uint32_t> crcs = c.all_gather_value(uint32_t{0xE3069283u} ^ static_cast<uint32_t>(me));
  gathered_bytes += sizeof(uint32_t);
  for (int k = 0; k < n; ++k) EXPECT_EQ(crcs[k], uint32_t{0xE3069283u} ^ static_cast<uint32_t>(k));
  const std::vector<uint8_t> bytes = c.all_gather_value(static_cast<uint8_t>(200 + me));
  gathered_bytes += 1;
  for (int k = 0; k < n; ++k) EXPECT_EQ(bytes[k], static_cast<uint8_t>(200 + k));

  // A struct of several fields, bit for bit.
  const std::vector<Record> records = c.all_gather_value(record_of(me));
  gathered_bytes += sizeof(Record);
  ASSERT_EQ(records.size(), static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const Record want = record_of(k);
    EXPECT_EQ(records[k].id, want.id) << "rank " << k;
    EXPECT_EQ(std::bit_cast<uint64_t>(records[k].x), std::bit_cast<uint64_t>(want.x)) << "rank " << k;
    EXPECT_EQ(records[k].a, want.a) << "rank " << k;
    EXPECT_EQ(records[k].b, want.b) << "rank " << k;
    EXPECT_EQ(records[k].tag[0], want.tag[0]) << "rank " << k;
    EXPECT_EQ(records[k].tag[1], want.tag[1]) << "rank " << k;
  }

  // An array type, like the trainer's counters.
  std::array<uint64_t, 5> counters{};
  for (size_t i = 0; i < counters.size(); ++i) counters[i] = (uint64_t{1} << 60) + i * 1000 + static_cast<uint64_t>(me);
  const auto all_counters = c.all_gather_value(counters);
  gathered_bytes += sizeof(counters);
  for (int k = 0; k < n; ++k) {
    for (size_t i = 0; i < counters.size(); ++i) {
      EXPECT_EQ(all_counters[k][i], (uint64_t{1} << 60) + i * 1000 + static_cast<uint64_t>(k));
    }
  }

  // The untyped form: rank r's value lands at r * size.
  const std::array<std::byte, 3> raw = {std::byte{1}, static_cast<std::byte>(me), std::byte{0xFF}};
  std::vector<std::byte> raw_out(3 * static_cast<size_t>(n));
  c.all_gather_value_bytes(raw, raw_out);
  gathered_bytes += raw.size();
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(raw_out[3 * k], std::byte{1});
    EXPECT_EQ(raw_out[3 * k + 1], static_cast<std::byte>(k));
    EXPECT_EQ(raw_out[3 * k + 2], std::byte{0xFF});
  }

  // Integer all-reduce: exact where fp64 is not.
  const uint64_t odd = kTwo53 + 1;  // fp64 would round it to 2^53
  EXPECT_EQ(c.all_reduce_uint64(odd, ReduceOp::kSum), static_cast<uint64_t>(n) * odd);
  EXPECT_EQ(c.all_reduce_uint64(me == 0 ? odd : 0, ReduceOp::kMax), odd);
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(c.all_reduce_uint64(top - static_cast<uint64_t>(n - 1 - me), ReduceOp::kMax), top);
  EXPECT_EQ(c.all_reduce_uint64(me == n - 1 ? top : 0, ReduceOp::kSum), top);  // no overflow at exactly 2^64 - 1
  EXPECT_EQ(c.all_reduce_uint64(static_cast<uint64_t>(me) + 1, ReduceOp::kSum),
            static_cast<uint64_t>(n) * static_cast<uint64_t>(n + 1) / 2);
  EXPECT_EQ(c.all_reduce_uint64(0, ReduceOp::kMax), 0u);

  // Accounting: all_gather's rule with a shard of the value's size; the
  // integer all-reduce like the fp64 one.
  const CommStats& s = c.stats();
  EXPECT_EQ(s[Collective::kValueAllGather].calls, 6u);
  EXPECT_EQ(s[Collective::kValueAllGather].bytes_sent, peers * gathered_bytes);
  EXPECT_EQ(s[Collective::kValueAllGather].bytes_received, peers * gathered_bytes);
  EXPECT_EQ(s[Collective::kIntAllReduce].calls, 6u);
  EXPECT_EQ(s[Collective::kIntAllReduce].bytes_sent, peers * 6 * 8);
  EXPECT_EQ(s[Collective::kIntAllReduce].bytes_received, peers * 6 * 8);
  EXPECT_EQ(s[Collective::kAllGather].calls, 0u);
  EXPECT_EQ(s[Collective::kScalarAllReduce].calls, 0u);
  EXPECT_EQ(s.total_calls(), 12u);
}

}  // namespace zerodp::comm::small_values
