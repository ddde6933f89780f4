// SPDX-License-Identifier: Apache-2.0
// How `zerodp plan --predict` shows its step times: the machine it assumed
// (each number with where it came from) and a table per N of the stages'
// compute, optimizer and communication time, the serial and the predicted
// step, the share of communication hidden, bytes and throughput; and the
// same as JSON.
// Thread-safety: all functions are pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/hardware.h"
#include "plan/step_time.h"

namespace zerodp::plan {

struct StepTimeRow {
  StepTimeRun run;
  StepTime time;
  // Why the model gives no time for this run (Hardware::oversubscribed);
  // "" when `time` is its prediction.
  std::string not_predicted = {};
  // Why it gives the serial step (overlap off) but not the overlapped one
  // (Hardware::comm_threads_oversubscribed); "" when it gives both.
  std::string overlap_not_predicted = {};
};

struct StepTimePrediction {
  std::string model_name;
  Hardware hardware;
  std::vector<StepTimeRow> rows;  // by N, then stage
};

// Every stage at every N of `ranks`, the rest of the run as `base` says.
StepTimePrediction predict_step_times(const GptShape& shape, std::string model_name, const StepTimeRun& base,
                                      const std::vector<int>& ranks, const Hardware& hw);

std::string format_step_time_text(const StepTimePrediction& p);
nlohmann::json step_time_to_json(const StepTimePrediction& p);

}  // namespace zerodp::plan
