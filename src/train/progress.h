// SPDX-License-Identifier: Apache-2.0
// Progress output of rank 0: a live line redrawn in place on a terminal
// (step/total, loss, val loss, tokens/s, ETA, loss scale under fp16), plain
// log lines every K steps otherwise (CI, pipes, files).
// Thread-safety: used by rank 0's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace zerodp::train {

struct ProgressEntry {
  int64_t step = 0;  // the training step, 1-based; skipped fp16 steps count (and are marked)
  int64_t total = 0;
  double loss = 0.0;
  double val_loss = -1.0;  // < 0: none yet
  double tokens_per_second = 0.0;
  double loss_scale = 0.0;  // 0: not fp16
  bool skipped = false;
};

// The seconds left at `step` of `total` when the steps after `first_step`
// (a resume's, or 0) took `elapsed` seconds: those steps' rate, not the
// whole run's (a resumed run has not timed the steps before it). 0 before
// the first of them.
double eta_seconds(double elapsed, int64_t first_step, int64_t step, int64_t total);

class Progress {
 public:
  // allow_live: false under mpirun, whose output forwarding looks like a
  // terminal to the ranks even when the user's output goes to a file.
  Progress(int64_t total_steps, int log_every, bool allow_live = true);
  // The run's steps start after `step` (a resume's) now: the ETA times
  // them from here, not from the construction (or the checkpoint's load).
  void start_at(int64_t step);
  void update(const ProgressEntry& entry);
  // A line that must not be overwritten (validation, warnings).
  void note(const std::string& line);
  // Ends the live line; says how many steps were skipped, if any.
  void finish();

 private:
  std::string format(const ProgressEntry& e) const;

  int64_t total_;
  int log_every_;
  bool live_;
  bool line_open_ = false;
  double last_val_ = -1.0;
  int64_t skipped_ = 0;  // fp16 overflow steps seen
  int64_t first_step_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zerodp::train
