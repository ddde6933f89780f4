// SPDX-License-Identifier: Apache-2.0
// The training loop behind `zerodp train`: loads the corpus, builds the model,
// starts the ranks (threads or MPI processes), and on every rank drives a
// zero::Engine through the steps; rank 0 prints progress, validation, the
// end-of-run summary (the ZeRO memory and communication story, measured next
// to the formulas) and a generated sample, and writes the metrics file.
// Thread-safety: run_training is called once from the main thread.
#pragma once

#include <cstdint>
#include <vector>

#include "train/train_config.h"

namespace zerodp::train {

struct TrainOutcome {
  std::vector<double> losses;  // per step (mean over ranks)
  double final_val_loss = 0.0;
  double tokens_per_second = 0.0;
  double held_out_accuracy = -1.0;  // embedded arithmetic only, else -1
  int ranks = 0;
  // This process's memory: the baseline measured at start, the plan
  // (baseline + its ranks' predicted ledger peaks) and the measured peak
  // resident set size at the end.
  uint64_t baseline_bytes = 0;
  uint64_t planned_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  // SIGINT or SIGTERM stopped the run after a checkpoint (stop_signal.h);
  // the process should exit with 128 + this. 0: the run completed.
  int interrupted_signal = 0;
};

TrainOutcome run_training(const TrainConfig& config);

}  // namespace zerodp::train
