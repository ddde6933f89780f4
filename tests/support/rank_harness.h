// SPDX-License-Identifier: Apache-2.0
// Test harness: runs one GoogleTest body on N thread ranks (or on this
// process's MPI rank) and turns a failure on any rank into a test failure.
//
//   zerodp::testing::run_on_ranks(4, [&](comm::Communicator& c) {
//     EXPECT_EQ(c.all_reduce_scalar(1.0, comm::ReduceOp::kSum), 4.0);
//   });
//
// A rank whose body hits a fatal assertion (ASSERT_*) returns early; the
// harness then aborts that rank's communicator so the other ranks stop
// promptly instead of waiting for a collective that never comes. The first
// rank's root-cause exception is reported with ADD_FAILURE.
// Thread-safety: GoogleTest's EXPECT_/ASSERT_ may be used from rank threads.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>

#include "comm/communicator.h"
#include "comm/world.h"

namespace zerodp::testing {

// Generous for a loaded 2-core machine, short enough that a hang fails fast.
inline comm::CommOptions test_comm_options() {
  comm::CommOptions options;
  options.timeout = std::chrono::seconds(60);
  return options;
}

// Wraps body so a fatal assertion on a rank poisons the group.
inline comm::RankBody guard_fatal_failures(const comm::RankBody& body) {
  return [body](comm::Communicator& c) {
    body(c);
    if (::testing::Test::HasFatalFailure()) {
      c.abort("a fatal test assertion failed on this rank");
      throw comm::PeerFailedError("a fatal test assertion failed on a rank (see above)");
    }
  };
}

// Runs body on n thread ranks; any exception becomes a test failure.
inline void run_on_ranks(int n, const comm::RankBody& body, const comm::CommOptions& options = test_comm_options()) {
  try {
    comm::run_thread_ranks(n, options, guard_fatal_failures(body));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a rank failed: " << e.what();
  }
}

// Runs body on one communicator (e.g. this process's MPI rank); any exception
// becomes a test failure.
inline void run_on_communicator(comm::Communicator& c, const comm::RankBody& body) {
  try {
    guard_fatal_failures(body)(c);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << c.rank() << " failed: " << e.what();
  }
}

}  // namespace zerodp::testing
