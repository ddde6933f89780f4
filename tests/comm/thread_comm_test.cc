// SPDX-License-Identifier: Apache-2.0
// Thread backend behaviour beyond the conformance suite: scalars, byte
// accounting totals, argument checks, many calls in a row, and collectives
// run from a helper thread.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <limits>
#include <numeric>
#include <vector>

#include "comm/reduce.h"
#include "comm/shard.h"
#include "comm/world.h"
#include "support/rank_harness.h"

namespace zerodp::comm {
namespace {

using zerodp::testing::run_on_ranks;

TEST(ScalarAllReduce, SumAvgMaxInThePairwiseOrder) {
  run_on_ranks(4, [](Communicator& c) {
    const double v = c.rank() + 1;  // 1, 2, 3, 4
    EXPECT_EQ(c.all_reduce_scalar(v, ReduceOp::kSum), 10.0);
    EXPECT_EQ(c.all_reduce_scalar(v, ReduceOp::kAvg), 2.5);
    EXPECT_EQ(c.all_reduce_scalar(v, ReduceOp::kMax), 4.0);
    // The order matters in fp64 (1e16 + 1 rounds to 1e16): the pairwise
    // order gives 0, left to right would give 1.
    const double parts[] = {1e16, 1.0, -1e16, 1.0};
    EXPECT_EQ(c.all_reduce_scalar(parts[c.rank()], ReduceOp::kSum), (1e16 + 1.0) + (-1e16 + 1.0));
    EXPECT_NE(c.all_reduce_scalar(parts[c.rank()], ReduceOp::kSum), ((1e16 + 1.0) + -1e16) + 1.0);
  });
}

TEST(ScalarAllReduce, MaxPropagatesNanForOverflowFlags) {
  run_on_ranks(3, [](Communicator& c) {
    const double v = c.rank() == 1 ? std::numeric_limits<double>::quiet_NaN() : 1.0;
    EXPECT_TRUE(std::isnan(c.all_reduce_scalar(v, ReduceOp::kMax)));
    EXPECT_EQ(c.all_reduce_scalar(c.rank() == 2 ? 1.0 : 0.0, ReduceOp::kMax), 1.0);
  });
}

TEST(ReduceOrdered, MaxKeepsFirstNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a[] = {1.0f, nan, 3.0f};
  const float b[] = {2.0f, 5.0f, nan};
  float out[3];
  const void* ins[] = {a, b};
  reduce_ordered(ins, out, 3, Dtype::fp32(), ReduceOp::kMax);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_TRUE(std::isnan(out[2]));
}

TEST(ReduceOrdered, LowPrecisionRoundsOnceNotPerStep) {
  // fp16: 2048 + 1 + 1. Rounding per step gives 2048 (2049 ties to even);
  // the fp32 sum 2050 is representable.
  const Half big = float_to_half(2048.0f), one = float_to_half(1.0f);
  const Half a[] = {big}, b[] = {one}, c[] = {one};
  Half out[1];
  const void* ins[] = {a, b, c};
  reduce_ordered(ins, out, 1, Dtype::fp16(), ReduceOp::kSum);
  EXPECT_EQ(half_to_float(out[0]), 2050.0f);
}

TEST(ByteAccounting, EvenSplitMatchesTheAlgorithmVolume) {
  constexpr int kRanks = 4;
  constexpr size_t kCount = 1024;
  const uint64_t full = kCount * 4;
  run_on_ranks(kRanks, [&](Communicator& c) {
    std::vector<float> buf(kCount, 1.0f), shard(kCount / kRanks, 1.0f);
    c.all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kSum);
    c.reduce_scatter(std::span<float>(buf), std::span<float>(shard), ReduceOp::kSum);
    c.all_gather(std::span<float>(shard), std::span<float>(buf));
    c.broadcast(std::span<float>(buf), 0);
    c.barrier();
    const CommStats& s = c.stats();
    EXPECT_EQ(s[Collective::kAllReduce].bytes_sent, 2 * (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kAllReduce].bytes_received, 2 * (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kReduceScatter].bytes_sent, (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kReduceScatter].bytes_received, (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kAllGather].bytes_sent, (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kAllGather].bytes_received, (kRanks - 1) * full / kRanks);
    EXPECT_EQ(s[Collective::kBarrier].calls, 1u);
    EXPECT_EQ(s[Collective::kBarrier].bytes_sent, 0u);
    EXPECT_EQ(s.total_calls(), 5u);
    c.reset_stats();
    EXPECT_EQ(c.stats().total_calls(), 0u);
  });
}

TEST(ByteAccounting, UnevenSplitSentEqualsReceivedOverRanks) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1000;  // 334, 333, 333
  std::vector<CommStats> stats(kRanks);
  run_on_ranks(kRanks, [&](Communicator& c) {
    std::vector<Half> buf(kCount);
    std::vector<Half> shard(shard_range(kCount, kRanks, c.rank()).count);
    c.all_reduce(std::span<Half>(buf), std::span<Half>(buf), ReduceOp::kAvg);
    c.reduce_scatter(std::span<Half>(buf), std::span<Half>(shard), ReduceOp::kSum);
    c.all_gather(std::span<Half>(shard), std::span<Half>(buf));
    stats[c.rank()] = c.stats();
  });
  for (Collective k : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather}) {
    uint64_t sent = 0, received = 0;
    for (const auto& s : stats) {
      sent += s[k].bytes_sent;
      received += s[k].bytes_received;
    }
    const uint64_t factor = k == Collective::kAllReduce ? 2 : 1;
    EXPECT_EQ(sent, received) << collective_name(k);
    EXPECT_EQ(sent, factor * (kRanks - 1) * kCount * 2) << collective_name(k);
  }
}

TEST(Arguments, WrongSizesAndOverlapsAreRejectedWithClearErrors) {
  auto expect_error = [](auto&& call, const char* fragment) {
    try {
      run_thread_ranks(1, {}, [&](Communicator& c) { call(c); });
      ADD_FAILURE() << "expected a CommError containing '" << fragment << "'";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  std::vector<float> a(8), b(7);
  std::vector<Half> h(8);
  expect_error([&](Communicator& c) { c.all_reduce(std::span<float>(a), std::span<float>(b), ReduceOp::kSum); },
               "[all_reduce] rank 0: input has 8 elements but output has 7");
  expect_error([&](Communicator& c) { c.all_reduce(std::span<float>(a), std::span<Half>(h), ReduceOp::kSum); },
               "dtype fp32 differs from output dtype fp16");
  expect_error([&](Communicator& c) { c.reduce_scatter(std::span<float>(a), std::span<float>(b), ReduceOp::kSum); },
               "[reduce_scatter] rank 0: output has 7 elements but this rank's shard of 8 elements over 1 ranks has 8");
  expect_error([&](Communicator& c) { c.all_gather(std::span<float>(b), std::span<float>(a)); },
               "[all_gather] rank 0: input has 7 elements");
  expect_error(
      [&](Communicator& c) {
        c.all_reduce(std::span<float>(a).subspan(0, 4), std::span<float>(a).subspan(2, 4), ReduceOp::kSum);
      },
      "overlap partially");
  expect_error([&](Communicator& c) { c.broadcast(std::span<float>(a), 1); },
               "[broadcast] rank 0: root 1 is out of range for 1 ranks");
}

TEST(ManyCalls, MixedCollectivesInARowStayInStep) {
  // Hundreds of small calls of every kind: catches phase and parity slips.
  run_on_ranks(4, [](Communicator& c) {
    for (int iter = 0; iter < 300; ++iter) {
      const size_t count = static_cast<size_t>(iter % 13);
      std::vector<float> buf(count, static_cast<float>(c.rank()));
      std::vector<float> shard(shard_range(count, c.size(), c.rank()).count);
      switch (iter % 5) {
        case 0:
          c.all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kSum);
          for (float v : buf) ASSERT_EQ(v, 6.0f);
          break;
        case 1:
          c.reduce_scatter(std::span<float>(buf), std::span<float>(shard), ReduceOp::kMax);
          for (float v : shard) ASSERT_EQ(v, 3.0f);
          break;
        case 2:
          for (float& v : shard) v = static_cast<float>(c.rank());
          c.all_gather(std::span<float>(shard), std::span<float>(buf));
          for (size_t i = 0; i < count; ++i) {
            int owner = 0;
            while (shard_range(count, c.size(), owner).offset + shard_range(count, c.size(), owner).count <= i) ++owner;
            ASSERT_EQ(buf[i], static_cast<float>(owner));
          }
          break;
        case 3:
          c.broadcast(std::span<float>(buf), iter % c.size());
          for (float v : buf) ASSERT_EQ(v, static_cast<float>(iter % c.size()));
          break;
        case 4:
          ASSERT_EQ(c.all_reduce_scalar(iter + c.rank(), ReduceOp::kMax), iter + 3.0);
          break;
      }
    }
  });
}

TEST(CommThread, CollectivesMayRunOnAHelperThreadOfTheRank) {
  // The contract: one thread at a time per rank, not always the same one.
  run_on_ranks(3, [](Communicator& c) {
    std::vector<float> buf(100, 1.0f);
    for (int i = 0; i < 20; ++i) {
      if (i % 2 == 0) {
        std::async(std::launch::async, [&] {
          c.all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kAvg);
        }).get();
      } else {
        c.all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kAvg);
      }
    }
    for (float v : buf) ASSERT_EQ(v, 1.0f);
  });
}

TEST(MakeThreadCommunicators, CallerOwnedThreads) {
  auto comms = make_thread_communicators(2, {});
  std::vector<double> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] { results[r] = comms[r]->all_reduce_scalar(r + 1.0, ReduceOp::kSum); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(results, (std::vector<double>{3.0, 3.0}));
  EXPECT_EQ(comms[1]->backend_name(), "thread");
}

TEST(Backend, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_backend("thread"), Backend::kThread);
  EXPECT_EQ(parse_backend("mpi"), Backend::kMpi);
  try {
    parse_backend("nccl");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.message()).find("'thread'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace zerodp::comm
