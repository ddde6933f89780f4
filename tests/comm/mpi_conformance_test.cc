// SPDX-License-Identifier: Apache-2.0
// The conformance suite on the MPI backend (this process is one rank), and
// the bitwise comparison with the thread backend: for the small cases each
// process also runs the same call on N thread ranks in-process and compares
// its rank's output hash. Plus MPI's failure paths: timeouts naming the peer
// and mismatched calls.
#include <gtest/gtest.h>

#include <functional>

#include <string>
#include <vector>

#include "comm/mpi.h"
#include "comm/world.h"
#include "conformance.h"
#include "quantized_collectives.h"
#include "small_values.h"
#include "split_cases.h"
#include "support/rank_harness.h"

namespace zerodp::comm::conformance {
namespace {

std::vector<Case> mpi_cases() {
  std::vector<Case> cases = cases_for(mpi_world_size(), /*big=*/false);
  for (const Case& c : big_mpi_cases()) cases.push_back(c);
  return cases;
}

class MpiConformance : public ::testing::TestWithParam<Case> {};

TEST_P(MpiConformance, MatchesReferenceAndThreadBackendBitwise) {
  const Case c = GetParam();
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  uint64_t mpi_hash = 0;
  zerodp::testing::run_on_communicator(*comm, [&](Communicator& world) { mpi_hash = run_case(world, c); });
  if (c.count > 10000) return;  // the thread comparison is for the small cases
  std::vector<uint64_t> thread_hash(static_cast<size_t>(comm->size()));
  zerodp::testing::run_on_ranks(comm->size(), [&](Communicator& t) { thread_hash[t.rank()] = run_case(t, c); });
  EXPECT_EQ(mpi_hash, thread_hash[comm->rank()]) << case_name(c) << ": MPI and thread backends differ";
}

INSTANTIATE_TEST_SUITE_P(All, MpiConformance, ::testing::ValuesIn(mpi_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

TEST(MpiScalar, SumInThePairwiseOrderAndMax) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  const int n = comm->size();
  EXPECT_EQ(comm->all_reduce_scalar(comm->rank() + 1.0, ReduceOp::kSum), n * (n + 1) / 2.0);
  EXPECT_EQ(comm->all_reduce_scalar(comm->rank(), ReduceOp::kMax), n - 1.0);
  const double parts[] = {1e16, 1.0, -1e16, 1.0};
  std::vector<double> values;
  for (int k = 0; k < n; ++k) values.push_back(parts[k % 4]);
  // comm/reduce.h's order, written out: the largest power-of-two prefix, then the rest.
  const std::function<double(size_t, size_t)> pairwise = [&](size_t lo, size_t count) -> double {
    if (count == 1) return values[lo];
    size_t prefix = 1;
    while (prefix * 2 < count) prefix *= 2;
    return pairwise(lo, prefix) + pairwise(lo + prefix, count - prefix);
  };
  EXPECT_EQ(comm->all_reduce_scalar(parts[comm->rank() % 4], ReduceOp::kSum), pairwise(0, values.size()));
  comm->barrier();
  EXPECT_EQ(comm->stats()[Collective::kBarrier].calls, 1u);
  EXPECT_EQ(comm->stats()[Collective::kScalarAllReduce].bytes_sent, 3u * (n - 1) * 8);
}

TEST(MpiSmallValues, ExactInRankOrderAndCounted) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  zerodp::testing::run_on_communicator(*comm, small_values::check_small_values);
}

// Communicator::split over MPI_Comm_split: every group size that divides N.
TEST(MpiSplit, GroupsAndReplicasMatchTheWorld) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  for (int group = 1; group <= comm->size(); ++group) {
    if (comm->size() % group != 0) continue;
    zerodp::testing::run_on_communicator(*comm, [&](Communicator& c) { split_cases::check_split(c, group); });
  }
}

// The compressed collectives: the reference and the byte counts on MPI
// ranks, and the thread backend's bits for the same calls.
TEST(MpiQuantized, MatchTheReferenceAndTheThreadBackendBitwise) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  uint64_t mpi_hash = 0;
  zerodp::testing::run_on_communicator(*comm,
                                       [&](Communicator& c) { mpi_hash = quantized::check_quantized_collectives(c); });
  std::vector<uint64_t> thread_hash(static_cast<size_t>(comm->size()));
  zerodp::testing::run_on_ranks(
      comm->size(), [&](Communicator& t) { thread_hash[t.rank()] = quantized::check_quantized_collectives(t); });
  EXPECT_EQ(mpi_hash, thread_hash[comm->rank()]) << "MPI and thread backends differ";
}

TEST(MpiFailure, TimeoutNamesTheCollectiveTheRankAndThePeer) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  const int n = comm->size();
  if (n == 1) GTEST_SKIP() << "needs a peer";
  CommOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto failing = make_mpi_communicator(options);
  const int absent = n - 1;
  if (comm->rank() != absent) {
    std::vector<float> buf(16, 1.0f);
    try {
      failing->all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kSum);
      ADD_FAILURE() << "expected a timeout";
    } catch (const CommTimeoutError& e) {
      const std::string want = "[all_reduce] rank " + std::to_string(comm->rank()) + ": timed out after 300 ms " +
                               "waiting for rank " + std::to_string(absent);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_TRUE(failing->broken());
  }
  comm->barrier();  // everyone back in step on a healthy communicator
}

TEST(MpiFailure, MismatchedCountsAndCollectivesAreErrors) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  if (comm->size() == 1) GTEST_SKIP() << "needs a peer";
  {
    auto c = make_mpi_communicator(zerodp::testing::test_comm_options());
    std::vector<float> buf(c->rank() == 0 ? 10 : 12, 1.0f);
    try {
      c->all_reduce(std::span<float>(buf), std::span<float>(buf), ReduceOp::kSum);
      ADD_FAILURE() << "expected a mismatch error";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("mismatched collective calls"), std::string::npos) << e.what();
    }
  }
  comm->barrier();
  {
    auto c = make_mpi_communicator(zerodp::testing::test_comm_options());
    std::vector<float> full(8, 1.0f);
    std::vector<float> shard(8, 1.0f);
    const size_t own = 8 / c->size() + (c->rank() < static_cast<int>(8 % c->size()) ? 1 : 0);
    try {
      if (c->rank() == 0) {
        c->all_gather(std::span<float>(shard).subspan(0, own), std::span<float>(full));
      } else {
        c->all_reduce(std::span<float>(full), std::span<float>(full), ReduceOp::kSum);
      }
      ADD_FAILURE() << "expected a mismatch error";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("mismatched collective calls"), std::string::npos) << e.what();
    }
  }
  comm->barrier();
}

TEST(MpiFailure, MismatchedValueSizesAreErrors) {
  auto comm = make_mpi_communicator(zerodp::testing::test_comm_options());
  if (comm->size() == 1) GTEST_SKIP() << "needs a peer";
  {
    auto c = make_mpi_communicator(zerodp::testing::test_comm_options());
    try {
      if (c->rank() == 0) {
        c->all_gather_value(uint32_t{1});
      } else {
        c->all_gather_value(uint64_t{1});
      }
      ADD_FAILURE() << "expected a mismatch error";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("mismatched collective calls"), std::string::npos) << e.what();
    }
  }
  comm->barrier();
}

TEST(MpiBackend, NameAndSize) {
  auto comm = make_mpi_communicator({});
  EXPECT_EQ(comm->backend_name(), "mpi");
  EXPECT_EQ(comm->size(), mpi_world_size());
  EXPECT_TRUE(mpi_available());
  EXPECT_TRUE(mpi_launched());
}

}  // namespace
}  // namespace zerodp::comm::conformance
