// SPDX-License-Identifier: Apache-2.0
// Failure, not hang: for every collective, a rank that fails poisons the
// group, a rank that never comes makes the others time out naming it, a rank
// that leaves is noticed, and mismatched calls fail with a clear CommError.
// None of these depends on timing: a missing wake-up would surface as the
// wrong error type (a 60 s timeout instead of PeerFailedError).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/shard.h"
#include "comm/world.h"
#include "support/rank_harness.h"
#include "support/same_bits.h"

namespace zerodp::comm {
namespace {

// One small, valid call of `kind` (count 10, fp32).
void call(Communicator& c, Collective kind, size_t count = 10, Dtype dtype = Dtype::fp32(),
          ReduceOp op = ReduceOp::kSum, int root = 0) {
  std::vector<float> buf(count, 1.0f);
  std::vector<float> shard(shard_range(count, c.size(), c.rank()).count, 1.0f);
  Buffer full(buf.data(), count, dtype);
  Buffer part(shard.data(), shard.size(), dtype);
  switch (kind) {
    case Collective::kAllReduce:
      c.all_reduce(full, full, op);
      break;
    case Collective::kReduceScatter:
      c.reduce_scatter(full, part, op);
      break;
    case Collective::kAllGather:
      c.all_gather(part, full);
      break;
    case Collective::kBroadcast:
      c.broadcast(full, root);
      break;
    case Collective::kBarrier:
      c.barrier();
      break;
    case Collective::kScalarAllReduce:
      c.all_reduce_scalar(1.0, op);
      break;
    case Collective::kValueAllGather: {  // a value of `count` bytes per rank
      std::vector<std::byte> value(count, std::byte{1});
      std::vector<std::byte> values(count * static_cast<size_t>(c.size()));
      c.all_gather_value_bytes(value, values);
      break;
    }
    case Collective::kIntAllReduce:
      c.all_reduce_uint64(1, op);
      break;
  }
}

using ::zerodp::testing::contains;

class EveryCollective : public ::testing::TestWithParam<Collective> {};

TEST_P(EveryCollective, FailingRankPoisonsTheGroup) {
  const Collective kind = GetParam();
  std::atomic<int> peer_failures{0};
  try {
    run_thread_ranks(3, zerodp::testing::test_comm_options(), [&](Communicator& c) {
      if (c.rank() == 1) throw std::runtime_error("boom on rank 1");
      try {
        call(c, kind);
      } catch (const PeerFailedError& e) {
        EXPECT_TRUE(contains(e.what(), "[" + std::string(collective_name(kind)) + "] rank " + std::to_string(c.rank()) +
                                           ": peer rank 1 failed: boom on rank 1"))
            << e.what();
        ++peer_failures;
        throw;
      }
    });
    ADD_FAILURE() << "expected the root cause to be rethrown";
  } catch (const std::runtime_error& e) {
    // The root cause, not one of the PeerFailedErrors it caused.
    EXPECT_EQ(std::string(e.what()), "boom on rank 1");
  }
  EXPECT_EQ(peer_failures.load(), 2);
}

TEST_P(EveryCollective, TimeoutNamesTheCollectiveTheRankAndThePeer) {
  const Collective kind = GetParam();
  CommOptions options;
  options.timeout = std::chrono::milliseconds(200);
  std::promise<void> waiters_done;
  std::shared_future<void> released = waiters_done.get_future().share();
  std::atomic<int> finished{0};
  std::atomic<int> timeouts{0};
  std::vector<std::string> messages(3);
  run_thread_ranks(3, options, [&](Communicator& c) {
    if (c.rank() == 2) {
      released.wait();  // alive, but never makes the call
      return;
    }
    try {
      call(c, kind);
      ADD_FAILURE() << "rank " << c.rank() << " expected an error";
    } catch (const CommTimeoutError& e) {
      messages[c.rank()] = e.what();
      ++timeouts;
    } catch (const PeerFailedError& e) {
      // The other waiter timed out first and poisoned the group.
      messages[c.rank()] = e.what();
    }
    if (++finished == 2) waiters_done.set_value();
  });
  EXPECT_GE(timeouts.load(), 1);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(contains(messages[r], "[" + std::string(collective_name(kind)) + "] rank " + std::to_string(r)))
        << messages[r];
    EXPECT_TRUE(contains(messages[r], "timed out after 200 ms waiting for rank 2")) << messages[r];
  }
}

TEST_P(EveryCollective, RankThatLeavesIsNoticed) {
  const Collective kind = GetParam();
  try {
    run_thread_ranks(2, zerodp::testing::test_comm_options(), [&](Communicator& c) {
      if (c.rank() == 0) call(c, kind);
    });
    ADD_FAILURE() << "expected a CommError";
  } catch (const CommTimeoutError& e) {
    ADD_FAILURE() << "the departure was not noticed: " << e.what();
  } catch (const CommError& e) {
    EXPECT_TRUE(contains(e.what(), "peer rank 1 finished its work without making this call")) << e.what();
  }
}

TEST_P(EveryCollective, BrokenCommunicatorFailsFast) {
  const Collective kind = GetParam();
  run_thread_ranks(2, zerodp::testing::test_comm_options(), [&](Communicator& c) {
    if (c.rank() == 1) c.abort("rank 1 gave up");
    EXPECT_THROW(call(c, kind), CommError);
    EXPECT_TRUE(c.broken());
    try {
      call(c, kind);
      ADD_FAILURE();
    } catch (const CommError& e) {
      EXPECT_TRUE(contains(e.what(), "broken by an earlier failure")) << e.what();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(All, EveryCollective,
                         ::testing::Values(Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                                           Collective::kBroadcast, Collective::kBarrier, Collective::kScalarAllReduce,
                                           Collective::kValueAllGather, Collective::kIntAllReduce),
                         [](const ::testing::TestParamInfo<Collective>& info) {
                           return std::string(collective_name(info.param));
                         });

// Rank 1 makes a different call from the others; every rank must fail.
void expect_mismatch(const std::function<void(Communicator&)>& odd, Collective kind, const std::string& fragment) {
  std::atomic<int> failures{0};
  try {
    run_thread_ranks(3, zerodp::testing::test_comm_options(), [&](Communicator& c) {
      try {
        if (c.rank() == 1) {
          odd(c);
        } else {
          call(c, kind);
        }
      } catch (const CommError& e) {
        ++failures;
        throw;
      }
    });
    ADD_FAILURE() << "expected a mismatch error";
  } catch (const CommError& e) {
    EXPECT_TRUE(contains(e.what(), "mismatched collective calls")) << e.what();
    EXPECT_TRUE(contains(e.what(), fragment)) << e.what();
  }
  EXPECT_EQ(failures.load(), 3);
}

TEST(Mismatch, DifferentCollectives) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kAllGather); }, Collective::kAllReduce, "all_gather");
}

TEST(Mismatch, DifferentCounts) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kAllReduce, 9); }, Collective::kAllReduce,
                  "9 fp32 elements");
}

TEST(Mismatch, DifferentDtypes) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kReduceScatter, 10, Dtype::bf16()); },
                  Collective::kReduceScatter, "bf16");
}

TEST(Mismatch, DifferentOps) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kAllReduce, 10, Dtype::fp32(), ReduceOp::kMax); },
                  Collective::kAllReduce, "op max");
}

TEST(Mismatch, DifferentValueSizes) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kValueAllGather, 9); }, Collective::kValueAllGather,
                  "all_gather_value of 9 bytes");
}

TEST(Mismatch, IntegerAndFloatingScalars) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kIntAllReduce, 10, Dtype::fp32(), ReduceOp::kMax); },
                  Collective::kScalarAllReduce, "all_reduce_uint64 (op max)");
}

TEST(Mismatch, DifferentRoots) {
  expect_mismatch([](Communicator& c) { call(c, Collective::kBroadcast, 10, Dtype::fp32(), ReduceOp::kSum, 2); },
                  Collective::kBroadcast, "root 2");
}

}  // namespace
}  // namespace zerodp::comm
