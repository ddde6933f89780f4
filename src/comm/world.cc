// SPDX-License-Identifier: Apache-2.0
#include "comm/world.h"

#include <exception>
#include <string>
#include <thread>

#include "comm/mpi.h"
#include "comm/thread_comm.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

std::string exception_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.message();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

bool is_peer_failure(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const PeerFailedError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

Backend parse_backend(std::string_view name) {
  if (name == "thread") return Backend::kThread;
  if (name == "mpi") return Backend::kMpi;
  ZDP_THROW(ConfigError, "[backend] unknown backend '{}': use 'thread' (ranks as threads) or 'mpi' (under mpirun)",
            name);
}

std::string_view backend_name(Backend backend) { return backend == Backend::kThread ? "thread" : "mpi"; }

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n, const CommOptions& options) {
  ZDP_CHECK(n >= 1, ConfigError, "[thread_ranks] the number of ranks must be at least 1, got {}", n);
  auto group = std::make_shared<ThreadGroup>(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  comms.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) comms.push_back(std::make_unique<ThreadCommunicator>(group, r, options));
  return comms;
}

void run_thread_ranks(int n, const CommOptions& options, const RankBody& body) {
  auto comms = make_thread_communicators(n, options);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  auto run_rank = [&](int r) {
    auto& comm = static_cast<ThreadCommunicator&>(*comms[r]);
    try {
      body(comm);
      comm.depart();
    } catch (...) {
      errors[r] = std::current_exception();
      comm.abort(exception_message(errors[r]));
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<size_t>(n - 1));
    for (int r = 1; r < n; ++r) threads.emplace_back(run_rank, r);
    run_rank(0);
  }  // joins
  const int first = static_cast<ThreadCommunicator&>(*comms[0]).group()->first_failed_rank();
  if (first >= 0 && errors[first]) std::rethrow_exception(errors[first]);
  for (const auto& e : errors) {
    if (e && !is_peer_failure(e)) std::rethrow_exception(e);
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void run_ranks(Backend backend, int n, const CommOptions& options, const RankBody& body) {
  if (backend == Backend::kThread) return run_thread_ranks(n, options, body);
  ZDP_CHECK(mpi_available(), ConfigError,
            "[backend] this zerodp was built without MPI; install OpenMPI (libopenmpi-dev) and rebuild, or use "
            "--backend thread");
  auto comm = make_mpi_communicator(options);
  // A launcher whose process-management interface the MPI library does not
  // speak (srun without --mpi=pmix) starts N singletons: each would train
  // its own copy.
  if (const auto launch = mpi_launch(); launch && launch->processes != comm->size()) {
    ZDP_THROW(ConfigError,
              "[backend] {} started {} processes, but MPI made this one a job of {}: the MPI library does not "
              "join this launcher's processes; under Slurm use srun --mpi=pmix (srun --mpi=list shows what the "
              "cluster offers) or mpirun inside the allocation",
              launch_command(launch->launcher, launch->processes), launch->processes, comm->size());
  }
  ZDP_CHECK(n <= 0 || n == comm->size(), ConfigError,
            "[backend] {} ranks were asked for but mpirun started {} processes; run under 'mpirun -np {}'", n,
            comm->size(), n);
  try {
    body(*comm);
  } catch (...) {
    comm->abort("the rank's work failed");
    mpi_abort_at_exit();
    throw;
  }
}

}  // namespace zerodp::comm
