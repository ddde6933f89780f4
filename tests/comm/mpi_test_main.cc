// SPDX-License-Identifier: Apache-2.0
// main() of comm_mpi_test, run as `mpirun -np N comm_mpi_test`: every rank
// runs the same tests in the same order (the collectives pair up across
// processes). Rank 0 prints GoogleTest's usual output; the other ranks print
// only their failures, prefixed with their rank. The exit code is non-zero
// on every rank when any rank failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "comm/mpi.h"

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = zerodp::comm::mpi_world_rank();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  auto comm = zerodp::comm::make_mpi_communicator({});
  const double any_failed = comm->all_reduce_scalar(failed, zerodp::comm::ReduceOp::kMax);
  if (rank == 0 && any_failed > 0 && !failed) std::fprintf(stderr, "comm_mpi_test: another rank failed\n");
  return any_failed > 0 ? 1 : 0;
}
