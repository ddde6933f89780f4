// SPDX-License-Identifier: Apache-2.0
// What the per-rank loop (rank_run.h) hands out after each training step,
// and the interface of those who act on it: the checkpoint policy, the
// held-out report, the metrics file and the progress line
// (step_observers.h). The loop knows none of them by name.
// Thread-safety: each rank has its own observers, called from its thread.
#pragma once

#include <cstdint>

#include "comm/stats.h"
#include "zero/engine.h"

namespace zerodp::train {

struct StepEvent {
  int64_t step = 0;   // steps done, this one included (the data position a save resumes at)
  int64_t steps = 0;  // the run's last step
  zero::StepResult result;
  double seconds = 0;           // this step's wall time on this rank
  zero::RankThreadTimes times;  // this step's on this rank (zero::Engine::thread_times)
  double tokens_per_step = 0;   // the job's: micro-batch x seq x accum x ranks
  double val_loss = -1;         // the validation loss after this step; -1 when not evaluated
  comm::CommStats comm;         // this rank's collectives during the step
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Called on every rank after every step, in the order the observers were
  // given; may be collective, so every rank must act alike.
  virtual void on_step(const StepEvent& event) = 0;
};

}  // namespace zerodp::train
