// SPDX-License-Identifier: Apache-2.0
// The compressed collectives (all_gather_quantized, reduce_scatter_quantized)
// checked on any backend against a reference built in the test: every rank
// regenerates every rank's input, packs it with comm::quantize (tested on
// its own in quantize_test.cc), dequantizes, and sums the contributions in
// the pairwise rank order written out recursively; the output must match
// bitwise, and the call's CommStats must equal the packed-bytes formula
// (docs/comm.md). Shared by comm_test (thread ranks) and comm_mpi_test
// (this process's MPI rank), which also compares the two backends' hashes.
// Thread-safety: check_quantized_collectives may run concurrently on
// different ranks.
#pragma once

#include <cstdint>

#include "comm/communicator.h"

namespace zerodp::comm::quantized {

// Every rank calls it with the same group; reports failures with EXPECT_*.
// Returns an FNV-1a hash of every output this rank received.
uint64_t check_quantized_collectives(Communicator& c);

}  // namespace zerodp::comm::quantized
