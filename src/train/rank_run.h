// SPDX-License-Identifier: Apache-2.0
// The per-rank half of `zerodp train` (the process-level half is
// run_setup.h): on one rank, check the memory plan before and after the
// warm-up, build the zero::Engine, initialise or resume it, then loop over
// the steps, handing each step's result to the observers
// (step_observers.h), and finish with the final validation, the summary and
// the sample (rank 0), or, after a stop signal, with a checkpoint and the
// command that continues the run.
// Thread-safety: one call per rank, each on its own thread or process.
#pragma once

#include "comm/communicator.h"
#include "train/run_setup.h"
#include "train/trainer.h"

namespace zerodp::train {

// Rank 0 fills `outcome` (and, under MPI, every process its interrupted_signal).
void run_rank(const RunSetup& run, comm::Communicator& comm, TrainOutcome& outcome);

}  // namespace zerodp::train
