// SPDX-License-Identifier: Apache-2.0
#include "train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace zerodp::train {

Progress::Progress(int64_t total_steps, int log_every, bool allow_live)
    : total_(total_steps),
      log_every_(log_every),
      live_(allow_live && isatty(fileno(stdout)) != 0),
      start_(std::chrono::steady_clock::now()) {}

double eta_seconds(double elapsed, int64_t first_step, int64_t step, int64_t total) {
  if (step <= first_step) return 0;
  return elapsed / static_cast<double>(step - first_step) * static_cast<double>(total - step);
}

void Progress::start_at(int64_t step) {
  first_step_ = step;
  start_ = std::chrono::steady_clock::now();
}

std::string Progress::format(const ProgressEntry& e) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = eta_seconds(elapsed, first_step_, e.step, total_);
  std::string line =
      fmt::format("step {:>{}}/{} | loss {:.4f}", e.step, fmt::formatted_size("{}", total_), total_, e.loss);
  if (last_val_ >= 0) line += fmt::format(" | val {:.4f}", last_val_);
  line += fmt::format(" | {:.0f} tok/s | ETA {}:{:02d}", e.tokens_per_second, static_cast<int>(eta) / 60,
                      static_cast<int>(eta) % 60);
  if (e.loss_scale > 0) line += fmt::format(" | scale {:g}", e.loss_scale);
  if (e.skipped) line += " | skipped (fp16 overflow: no update)";
  return line;
}

void Progress::update(const ProgressEntry& entry) {
  if (entry.val_loss >= 0) last_val_ = entry.val_loss;
  if (live_) {
    fmt::print("\r\033[K{}", format(entry));
    (void)std::fflush(stdout);  // a closed stdout must not stop training
    line_open_ = true;
    return;
  }
  if (entry.skipped) ++skipped_;
  // Skipped steps always get a line: they are rare and a user looks for them.
  if (entry.step == first_step_ + 1 || entry.step == total_ || (log_every_ > 0 && entry.step % log_every_ == 0) ||
      entry.val_loss >= 0 || entry.skipped) {
    fmt::print("{}\n", format(entry));
    (void)std::fflush(stdout);
  }
}

void Progress::note(const std::string& line) {
  if (line_open_) fmt::print("\n");
  line_open_ = false;
  fmt::print("{}\n", line);
  (void)std::fflush(stdout);
}

void Progress::finish() {
  if (line_open_) fmt::print("\n");
  line_open_ = false;
  if (skipped_ > 0) {
    fmt::print(
        "{} of the steps were skipped: fp16 gradients overflowed, the loss scale was lowered and the "
        "parameters were not updated (the metrics file marks them \"skipped\": true)\n",
        skipped_);
  }
  (void)std::fflush(stdout);
}

}  // namespace zerodp::train
