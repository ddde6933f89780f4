// SPDX-License-Identifier: Apache-2.0
// The observers of a training step (step_observer.h), one job each:
//   CheckpointPolicy  saves every --save-every steps (and, asked by the loop,
//                     at the end and on a stop signal); collective
//   HeldOutReport     after each validation, rank 0 answers the held-out sums
//                     from one gathered fp32 copy; collective
//   MetricsLog        gathers every rank's ledger and step counters and rank 0
//                     writes the step's metrics record; collective
//   ProgressLine      rank 0's progress line
// Rank 0 passes its Progress / MetricsWriter; the other ranks pass nullptr
// and take part in the collectives only.
// Thread-safety: one set per rank, used from that rank's thread.
#pragma once

#include <cstdint>
#include <string>

#include "model/causal_lm.h"
#include "train/corpus.h"
#include "train/metrics.h"
#include "train/progress.h"
#include "train/resume_config.h"
#include "train/step_observer.h"
#include "train/train_config.h"
#include "zero/engine.h"

namespace zerodp::train {

// The command that continues a run whose checkpoints are under `root`:
// `zerodp train --resume ROOT` and the flags a checkpoint does not record
// (where to keep saving, how often, the thread ranks when given). Under the
// MPI backend it starts with the launcher that started this run (`mpirun
// -np RANKS`, `srun -n RANKS`; comm::launch_command), RANKS being the run's
// number of ranks (its processes).
std::string resume_command(const TrainConfig& config, const std::string& root, int ranks);

class CheckpointPolicy : public StepObserver {
 public:
  // `ranks`: the run's (the world's, a pipeline's stages included).
  CheckpointPolicy(zero::Trainable& trainee, int ranks, const TrainConfig& config, const DataFingerprint& data,
                   Progress* progress);
  void on_step(const StepEvent& event) override;
  // Saves the trainee's state as of `data_step` steps under `root`
  // (collective). A failed save leaves nothing of itself (ckpt::save removes
  // its step-N.tmp) and throws IoError on every rank naming the cause, the
  // last complete checkpoint under `root` and the command that resumes it.
  // Periodic saves under --on-save-failure continue instead report a write
  // error (rank 0 with the next save point, a rank whose own write failed
  // with its cause) and return: every rank trains on.
  void save(int64_t data_step, const std::string& root);
  // The data position of the last save of this run; -1 before any.
  int64_t last_saved() const { return last_saved_; }
  // Periodic saves that failed and were survived.
  int failed_saves() const { return failed_saves_; }

 private:
  void save_at(int64_t data_step, const std::string& root, bool survive_write_errors);

  zero::Trainable& trainee_;
  int ranks_;
  const TrainConfig& config_;
  const DataFingerprint& data_;
  Progress* progress_;
  int64_t last_saved_ = -1;
  int failed_saves_ = 0;
};

class HeldOutReport : public StepObserver {
 public:
  HeldOutReport(zero::Trainable& trainee, const model::CausalLm& lm, const Corpus& corpus, const TrainConfig& config,
                Progress* progress);
  void on_step(const StepEvent& event) override;

 private:
  zero::Trainable& trainee_;
  const model::CausalLm& lm_;
  const Corpus& corpus_;
  const TrainConfig& config_;
  Progress* progress_;
};

class MetricsLog : public StepObserver {
 public:
  MetricsLog(zero::Engine& engine, comm::Communicator& comm, MetricsWriter* writer);
  void on_step(const StepEvent& event) override;

 private:
  zero::Engine& engine_;
  comm::Communicator& comm_;
  MetricsWriter* writer_;
};

class ProgressLine : public StepObserver {
 public:
  ProgressLine(Progress& progress, bool show_loss_scale) : progress_(progress), show_loss_scale_(show_loss_scale) {}
  void on_step(const StepEvent& event) override;

 private:
  Progress& progress_;
  bool show_loss_scale_;  // fp16: the progress line shows the loss scale
};

}  // namespace zerodp::train
