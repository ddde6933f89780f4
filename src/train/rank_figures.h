// SPDX-License-Identifier: Apache-2.0
// What every rank reports for the metrics file and the summary, gathered on
// every rank in one collective: its ledger (current and peak bytes by
// category, model states, owned elements) and its counters of the last step
// (calls, bytes sent, bytes received per collective; not the seconds) and
// its masked targets in that step.
// Thread-safety: collect_figures is collective (every rank calls it).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "train/summary.h"
#include "zero/engine.h"

namespace zerodp::train {

struct AllRankFigures {
  std::vector<RankMemory> memory;              // per rank
  std::vector<comm::CommStats> step_comm;      // per rank
  uint64_t masked_targets = 0;                 // the last step's, over every rank (no loss at them)
  std::vector<double> step_cpu_seconds;        // per rank: the step's CPU time of its threads
  std::vector<double> step_comm_cpu_seconds;   // per rank: of it, its comm thread's
  std::vector<double> step_comm_wait_seconds;  // per rank: its compute thread's wait for the comm thread
  std::vector<double> step_runqueue_seconds;   // per rank: its compute thread's time ready but off its core
};

// One all-gather of a fixed-size struct of integers.
// `step_times`: the step's thread times on this rank (StepEvent::times).
AllRankFigures collect_figures(comm::Communicator& comm, const zero::Engine& engine, const comm::CommStats& step,
                               const zero::RankThreadTimes& step_times);

}  // namespace zerodp::train
