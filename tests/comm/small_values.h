// SPDX-License-Identifier: Apache-2.0
// The typed small collectives (all_reduce_uint64, all_gather_value) checked
// on any backend: exact values above 2^53, structs of several fields, rank
// order and the byte accounting. Shared by comm_test (thread ranks) and
// comm_mpi_test (this process's MPI rank).
// Thread-safety: check_small_values may run concurrently on different ranks.
#pragma once

#include "comm/communicator.h"

namespace zerodp::comm::small_values {

// Every rank calls it with the same group, on a communicator whose stats
// start at zero; reports failures with EXPECT_*.
void check_small_values(Communicator& c);

}  // namespace zerodp::comm::small_values
