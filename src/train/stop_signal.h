// SPDX-License-Identifier: Apache-2.0
// Preemption: cluster schedulers send SIGTERM (and users press Ctrl-C)
// before they kill a job. While a StopOnSignals lives, the first SIGINT or
// SIGTERM only records the request: the trainer finishes the step in
// progress on every rank (the ranks agree on the step with one scalar
// all-reduce per step), saves a checkpoint, prints how to resume and exits
// with 128 + the signal. A second signal exits at once (_exit), leaving the
// last complete checkpoint intact (saves are atomic: docs/checkpoint-format.md).
// Thread-safety: the handler only stores an atomic; one StopOnSignals at a
// time per process.
#pragma once

namespace zerodp::train {

class StopOnSignals {
 public:
  StopOnSignals();   // installs the handlers for SIGINT and SIGTERM
  ~StopOnSignals();  // restores the previous ones
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  // The first signal received since construction, or 0.
  static int requested();
};

// "SIGTERM", "SIGINT", or "signal N".
const char* signal_name(int signal);

}  // namespace zerodp::train
