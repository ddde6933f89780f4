// SPDX-License-Identifier: Apache-2.0
// The MPI backend: one rank per process over OpenMPI, started with
// `mpirun -np N`. Built from mpi_comm.cc and mpi_native.cc when CMake finds
// MPI, else from no_mpi.cc (where mpi_available() is false and the rest
// throws ConfigError saying how to get MPI).
//
// MPI is initialised once per process, on first use, with
// MPI_Init_thread asking for MPI_THREAD_MULTIPLE and accepting
// MPI_THREAD_SERIALIZED (a rank may run its collectives from a helper
// thread); it is finalised at exit. Make the first call from the main thread.
//
// Collectives are point-to-point Isend/Irecv exchanges polled against the
// deadline, so a timeout names the peer that did not answer and a killed
// process never blocks the others forever:
//   reduce_scatter: every rank sends each peer that peer's shard of its input
//                   (an all-to-all of shards, (N-1)/N of the data), then sums
//                   the N contributions locally in rank order (reduce.h);
//   all_gather:     every rank sends its shard to every peer;
//   all_reduce:     reduce_scatter then all_gather.
// This is why the results equal the thread backend's bit for bit; MPI's own
// reductions (MPI_Allreduce) do not promise an order. Each message's tag
// carries the collective, dtype, op and the low bits of the count, so
// mismatched calls fail with a CommError instead of corrupting data.
// Thread-safety: see communicator.h.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.h"

namespace zerodp::comm {

// Whether this build has the MPI backend.
bool mpi_available();
// What launched this process as one of a job's: Open MPI's mpirun
// (OMPI_COMM_WORLD_*), Slurm's srun (SLURM_STEP_NUM_TASKS > 1, SLURM_PROCID,
// SLURM_STEP_TASKS_PER_NODE; a one-task srun step is not a job of several
// processes, and a batch script's own environment has no step) or another
// PMI launcher such as MPICH's mpiexec (PMI_SIZE, PMI_RANK), tried in that
// order.
enum class Launcher { kMpirun, kSrun, kPmi };
// What that launcher told this process through its environment: the job's
// process count, how many of them share this host (1 when the launcher does
// not say) and this process's rank in the job (0 when it does not say).
// nullopt when no launcher started it; ConfigError when a count is not a
// positive integer or the rank not one of the processes. mpi_launch.cc.
struct MpiLaunch {
  Launcher launcher = Launcher::kMpirun;
  int processes = 1;
  int processes_on_host = 1;
  int rank = 0;
};
std::optional<MpiLaunch> mpi_launch();
// Whether this process was started by a launcher: mpi_launch().has_value().
bool mpi_launched();
// The command that starts `processes` processes as `launcher` did: "mpirun
// -np 4", "srun -n 4", "mpiexec -n 4" (how a printed command resumes a job).
std::string launch_command(Launcher launcher, int processes);
// The MPI library's version line ("Open MPI v4.1.4, ..."; MPI_Get_library_version,
// which needs no MPI_Init); "" in a build without MPI.
std::string mpi_library_version();
// mpirun's path found at configure time; the environment variable
// ZERODP_MPIRUN overrides it. Empty when unknown.
std::string mpiexec_path();

// This process's communicator over a duplicate of MPI_COMM_WORLD (each call
// makes a new, independent one). Initialises MPI if needed.
std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options);
int mpi_world_size();
int mpi_world_rank();

// At exit, call MPI_Abort instead of MPI_Finalize (a rank failed: take the
// other processes down now rather than at their timeouts).
void mpi_abort_at_exit();

// OpenMPI's own collectives, timed for the benchmark's baseline (all ranks
// call it together). kind: kAllReduce (MPI_Allreduce, sum), kReduceScatter
// (MPI_Reduce_scatter_block, sum), kAllGather (MPI_Allgather) or kBroadcast
// (MPI_Bcast from rank 0). fp16/bf16 sums use a user-defined MPI_Op that adds
// in fp32 and rounds at every step. `count` is the full buffer; for the
// block collectives it is rounded down to a multiple of the ranks
// (NativeTiming::count says what ran). seconds: per call, the slowest rank's
// mean over `iterations` calls, the best of `batches` such batches.
struct NativeTiming {
  double seconds = 0;
  size_t count = 0;
};
NativeTiming mpi_native_time(Collective kind, Dtype dtype, size_t count, int iterations, int batches = 1);

}  // namespace zerodp::comm
