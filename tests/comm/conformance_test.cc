// SPDX-License-Identifier: Apache-2.0
// The conformance suite on the thread backend: every collective x N in
// {1, 2, 3, 4, 7} x dtype x count, bitwise against the reference, with the
// byte accounting; plus run-to-run determinism.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "conformance.h"
#include "support/rank_harness.h"

namespace zerodp::comm::conformance {
namespace {

struct Param {
  int n;
  Case c;
};

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (int n : {1, 2, 3, 4, 7}) {
    for (const Case& c : cases_for(n, /*big=*/true)) params.push_back({n, c});
  }
  return params;
}

void PrintTo(const Param& p, std::ostream* os) { *os << "n=" << p.n << " " << case_name(p.c); }

class ThreadConformance : public ::testing::TestWithParam<Param> {};

TEST_P(ThreadConformance, MatchesReferenceBitwise) {
  const Param p = GetParam();
  zerodp::testing::run_on_ranks(p.n, [&](Communicator& comm) { run_case(comm, p.c); });
}

INSTANTIATE_TEST_SUITE_P(All, ThreadConformance, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return fmt::format("n{}_{}", info.param.n, case_name(info.param.c));
                         });

// The same call twice gives the same bits on every rank (no dependence on
// thread timing).
TEST(ThreadDeterminism, RepeatedRunsGiveIdenticalBits) {
  for (int n : {3, 7}) {
    for (const Case& c : {Case{CaseKind::kAllReduceSum, Dtype::bf16(), 1009, Data::kRandom},
                          Case{CaseKind::kAllReduceAvg, Dtype::fp32(), 1009, Data::kRandom},
                          Case{CaseKind::kReduceScatterSum, Dtype::fp16(), 1009, Data::kRandom}}) {
      std::vector<uint64_t> first(static_cast<size_t>(n)), second(static_cast<size_t>(n));
      zerodp::testing::run_on_ranks(n, [&](Communicator& comm) { first[comm.rank()] = run_case(comm, c); });
      zerodp::testing::run_on_ranks(n, [&](Communicator& comm) {
        for (int repeat = 0; repeat < 3; ++repeat) second[comm.rank()] = run_case(comm, c);
      });
      EXPECT_EQ(first, second) << case_name(c) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace zerodp::comm::conformance
