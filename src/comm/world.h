// SPDX-License-Identifier: Apache-2.0
// Starting ranks: the thread backend's launcher (N threads in this process)
// and one entry point that runs a body on the ranks of either backend.
//
//   comm::run_ranks(comm::Backend::kThread, 4, {}, [&](comm::Communicator& c) {
//     ... c.all_reduce(grads, grads, comm::ReduceOp::kAvg); ...
//   });
//
// Thread backend: the body runs concurrently on N threads (the calling thread
// is rank 0); all are joined, and if any failed the root cause is rethrown:
// the exception of the rank that failed first, not the PeerFailedErrors its
// failure caused in the others. A rank whose body throws poisons the group,
// so the other ranks stop promptly.
// MPI backend: this process is one rank; the body runs once on it (see
// mpi.h). Thread-safety: run_* may be called from any thread; bodies run
// concurrently and must synchronise their own shared data.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "comm/communicator.h"

namespace zerodp::comm {

enum class Backend { kThread, kMpi };

// "thread" or "mpi"; ConfigError naming both otherwise.
Backend parse_backend(std::string_view name);
std::string_view backend_name(Backend backend);

using RankBody = std::function<void(Communicator&)>;

// n communicators over one shared group, for callers that run their own
// threads: communicator r must be used by rank r's thread(s) only.
// Destroying one marks its rank as gone (peers waiting for it throw).
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n, const CommOptions& options);

// Runs body on n thread ranks and joins them; rethrows the root-cause failure.
void run_thread_ranks(int n, const CommOptions& options, const RankBody& body);

// Runs body on the ranks of `backend`. kThread: n thread ranks as above.
// kMpi: this process's rank of MPI_COMM_WORLD; n must equal the number of
// processes mpirun started (or be 0 for "whatever it started"), else
// ConfigError with the mpirun command that fixes it. If the body throws, the
// error is rethrown and, at exit, MPI_Abort takes the other processes down
// instead of letting them wait for their timeouts.
void run_ranks(Backend backend, int n, const CommOptions& options, const RankBody& body);

}  // namespace zerodp::comm
