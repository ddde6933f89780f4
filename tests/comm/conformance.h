// SPDX-License-Identifier: Apache-2.0
// The collective conformance suite, shared by the thread-backend tests
// (comm_test) and the MPI tests (comm_mpi_test, under mpirun): one case is
// one collective call on every rank with inputs every rank can regenerate,
// checked bitwise against a reference and against the byte accounting.
//
// References: for "exact" data (integers times small powers of two, chosen
// so every fp32 sum is exact) the reference is the fp64 sum rounded as the
// contract says (kAvg: fp32 division, then one rounding to the dtype); for
// "random" data (random magnitudes, sums round) it is the contract's pairwise
// fp32 sum written out recursively, and additionally within tolerance of the
// fp64 sum.
// Thread-safety: run_case may run concurrently on different ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace zerodp::comm::conformance {

enum class Data { kExact, kRandom };

enum class CaseKind {
  kAllReduceSum,
  kAllReduceAvg,
  kAllReduceMax,
  kAllReduceInPlace,
  kReduceScatterSum,
  kReduceScatterAvg,
  kReduceScatterInPlace,
  kAllGather,
  kAllGatherInPlace,
  kBroadcast,
};

struct Case {
  CaseKind kind;
  Dtype dtype;
  size_t count;
  Data data;
};

// "all_reduce_sum_bf16_1009_random" (a valid GoogleTest name part).
std::string case_name(const Case& c);
// GoogleTest prints parameters with this instead of their bytes.
void PrintTo(const Case& c, std::ostream* os);

// Every case for n ranks: all kinds x dtypes x counts {1, n-1, 1009 (a prime,
// random data), 1M+3 (only a few kinds)}. big=false leaves out 1M+3.
std::vector<Case> cases_for(int n, bool big);
// The 1M+3 cases an MPI run uses (a handful, they are slow oversubscribed).
std::vector<Case> big_mpi_cases();

// Runs c on this rank and checks the output and this call's stats with
// EXPECT_*. Returns an FNV-1a hash of this rank's output.
uint64_t run_case(Communicator& comm, const Case& c);

}  // namespace zerodp::comm::conformance
