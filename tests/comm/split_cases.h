// SPDX-License-Identifier: Apache-2.0
// Communicator::split's checks, shared by the thread-backend tests
// (comm_test) and the MPI tests (comm_mpi_test): one body per rank that
// splits the world into groups of `group` consecutive ranks and into the
// "replica" groups across them (the hybrid-sharding layout, zero/engine.h),
// and checks sizes, ranks, collectives inside both, the stats that reach the
// parent, and that an in-group sum followed by the across-group sum gives
// the world all-reduce's bits when `group` is a power of two.
// Thread-safety: check_split may run concurrently on different ranks.
#pragma once

#include "comm/communicator.h"

namespace zerodp::comm::split_cases {

// REQUIRES group divides world.size().
void check_split(Communicator& world, int group);

}  // namespace zerodp::comm::split_cases
