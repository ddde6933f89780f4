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

class Progress {
 public:
  // allow_live: false under mpirun, whose output forwarding looks like a
  // terminal to the ranks even when the user's output goes to a file.
  Progress(int64_t total_steps, int log_every, bool allow_live = true);
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
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zerodp::train
