// SPDX-License-Identifier: Apache-2.0
// The effective configuration of a run: every setting that decides what is
// trained and how, with its value and where it came from (a default, a
// config file key, a flag, the checkpoint it resumes, or derived from
// others). Printed at the start of `zerodp train` and written as the first
// record of the metrics file, so a report is self-contained.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "train/train_config.h"

namespace zerodp::train {

struct Setting {
  std::string name;      // the train flag's name without dashes: "stage", "lr"
  nlohmann::json value;  // a number, string, bool or array
  std::string source;    // TrainConfig::source_of(name), or how it was derived
};

// REQUIRES the batch resolved for `ranks` (resolve_batch).
std::vector<Setting> effective_settings(const TrainConfig& config, int ranks);

// "effective configuration:" and the settings grouped by where they came
// from (flags, config file, checkpoint, derived, defaults), e.g.
// "  config file: stage 2 (zero_optimization.stage), ...".
std::string format_effective_config(const std::vector<Setting>& settings);

// {"config": {"stage": {"value": 2, "source": "..."}, ...}, "build": {run_facts()}}:
// the metrics file's first record.
nlohmann::json effective_config_record(const std::vector<Setting>& settings);

}  // namespace zerodp::train
