// SPDX-License-Identifier: Apache-2.0
// MetricsWriter: the --metrics file, JSON Lines. The format and its typed
// records are defined once, in report/metrics_record.h (what `zerodp
// report` reads back): a first config record (effective_config.h), one
// report::StepRecord per step, a last report::FinalRecord. This file turns
// the trainer's figures (a step's result, each rank's ledger and counters)
// into those records and writes them. Flushed every line, so a crash loses
// at most the line being written.
//
// A resumed run continues its file: the records up to the step it resumed
// from stay (the steps after it, which ran before the interruption and are
// trained again, the final record and a line cut short by a crash go), and
// the run appends its own config record, then its steps. The kept records
// are written to a temporary file renamed over the old one, so a crash in
// between leaves the old file whole.
// Thread-safety: rank 0's thread only.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "comm/stats.h"
#include "report/metrics_record.h"
#include "train/rank_figures.h"
#include "train/summary.h"

namespace zerodp::zero {
struct StepResult;
}  // namespace zerodp::zero

namespace zerodp::train {

class MetricsWriter {
 public:
  // Opens (truncates) path; ConfigError when it cannot be created.
  explicit MetricsWriter(const std::string& path);
  // A resumed run's file: continues `path` after step `resumed_step` as
  // above (a missing file is started anew). ConfigError, the file left as it
  // is, when a line before the last is not a record of a metrics file.
  MetricsWriter(const std::string& path, int64_t resumed_step);
  void write(const report::StepRecord& record);
  void write(const report::FinalRecord& record);
  // A line as it is: the config record (effective_config_record).
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

// Each rank's ledger: every category's current and peak bytes, and its
// model-state bytes.
std::vector<report::RankMemoryRecord> memory_records(const std::vector<RankMemory>& memory);
// Each rank's counters of one step, by collective; a collective with no
// calls in the step is left out.
std::vector<report::RankCommRecord> comm_records(const std::vector<comm::CommStats>& step_comm);

// The record of optimizer step `step` (counted from 1): its result `r`, its
// `seconds`, its throughput (tokens_per_step / seconds), `val_loss` when the
// step computed one (negative: none), every rank's figures, and of the
// step's tokens_per_step targets those trained on and those masked.
// grad_norm is absent (null) on a skipped step.
report::StepRecord step_record(int64_t step, const zero::StepResult& r, double seconds, double tokens_per_step,
                               double val_loss, const AllRankFigures& figures);

}  // namespace zerodp::train
