// SPDX-License-Identifier: Apache-2.0
// Process-wide MPI state shared by mpi_comm.cc and mpi_native.cc (internal,
// MPI builds only): one-time initialisation and finalisation at exit.
// Thread-safety: ensure_mpi() is safe to call from any thread.
#pragma once

namespace zerodp::comm::detail {

// Initialises MPI once (MPI_THREAD_MULTIPLE asked, SERIALIZED accepted);
// throws CommError when MPI cannot give at least SERIALIZED.
void ensure_mpi();
// The largest tag MPI allows (MPI_TAG_UB).
int mpi_tag_upper_bound();

}  // namespace zerodp::comm::detail
