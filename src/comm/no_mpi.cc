// SPDX-License-Identifier: Apache-2.0
// The MPI entry points of a build without MPI: mpi_available() is false and
// everything else explains how to get the backend.
#include <cstdlib>

#include "comm/mpi.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

[[noreturn]] void no_mpi(const char* what) {
  ZDP_THROW(ConfigError,
            "[{}] this zerodp was built without MPI; install OpenMPI (apt-get install libopenmpi-dev openmpi-bin) "
            "and rebuild, or use the thread backend",
            what);
}

}  // namespace

bool mpi_available() { return false; }

std::string mpi_library_version() { return ""; }

std::string mpiexec_path() {
  const char* env = std::getenv("ZERODP_MPIRUN");
  return env != nullptr ? env : "";
}

std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions&) { no_mpi("mpi"); }
int mpi_world_size() { no_mpi("mpi"); }
int mpi_world_rank() { no_mpi("mpi"); }
void mpi_abort_at_exit() {}
NativeTiming mpi_native_time(Collective, Dtype, size_t, int, int) { no_mpi("mpi_native"); }

}  // namespace zerodp::comm
