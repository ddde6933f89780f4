// SPDX-License-Identifier: Apache-2.0
#include "train/trainer.h"

#include "comm/world.h"
#include "core/process_memory.h"
#include "train/rank_run.h"
#include "train/run_setup.h"
#include "train/stop_signal.h"

namespace zerodp::train {

TrainOutcome run_training(const TrainConfig& input) {
  return_large_frees_to_the_os();  // so that the process's peak is the ledger's (core/process_memory.h)
  const RunSetup run = prepare_run(input);
  TrainOutcome outcome;
  comm::CommOptions comm_options;
  comm_options.timeout = timeout_ms(run.config.comm_timeout_s);
  const StopOnSignals stop_on_signals;  // SIGINT/SIGTERM: finish the step, save, exit (stop_signal.h)
  comm::run_ranks(run.config.backend, run.config.ranks, comm_options,
                  [&](comm::Communicator& comm) { run_rank(run, comm, outcome); });
  return outcome;
}

}  // namespace zerodp::train
