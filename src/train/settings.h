// SPDX-License-Identifier: Apache-2.0
// The run settings of `zerodp train`, each declared once as a row: its name
// (the flag's name without dashes, as TrainConfig::sources keys it), typed
// access to its value in a TrainConfig (as JSON, the form a checkpoint
// records), what a resume does with it, and how the effective configuration
// prints it. The resume table (resume_config.cc) and the effective
// configuration (effective_config.cc) are read off these rows; adding a
// setting is adding its row (settings.cc) and the code that uses its value.
// Thread-safety: the table is built once, on first use, and only read.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/train_config.h"

namespace zerodp::train {

// What a resume does with a setting.
enum class ResumePolicy : uint8_t {
  kNotRecorded,  // not in the checkpoint: a resume may change it freely (ranks, stage, logging, ...)
  kMustMatch,    // recorded; taken from the checkpoint unless given, and a given other value is refused
                 // unless --resume-override names it
  kMayChange,    // recorded; taken from the checkpoint unless given, and a given value wins (--steps)
};

// Which default a setting has when nothing gave it: zerodp's always, or the
// run's (`TrainConfig::defaults`: DeepSpeed's once a config file is applied).
enum class DefaultFrom : uint8_t { kZerodp, kRun };

// A value of the effective configuration; `source` empty: the setting's own
// (where it came from, or its default).
struct Shown {
  nlohmann::json value;
  std::string source;
};

struct SettingRow;
// Whether and how the effective configuration shows a setting for a run of
// `ranks` ranks (REQUIRES the batch resolved); nullopt: not shown for this run.
using ShowFn = std::function<std::optional<Shown>(const SettingRow&, const TrainConfig&, int ranks)>;

struct SettingRow {
  std::string_view name;  // "micro-batch", "lr"
  ResumePolicy resume = ResumePolicy::kNotRecorded;
  DefaultFrom defaults = DefaultFrom::kRun;
  // The value as its JSON form (a checkpoint's record keeps it so); null
  // for a setting only printed (derived from others).
  std::function<nlohmann::json(const TrainConfig&)> get;
  // Sets the value from that JSON form, and whatever the setting decides
  // with it (the lr of every optimizer, "given" for the accumulation);
  // null for a setting no resume sets.
  std::function<void(TrainConfig&, const nlohmann::json&)> set;
  ShowFn show;  // null: not in the effective configuration

  bool recorded() const { return resume != ResumePolicy::kNotRecorded; }
};

// Every setting, in the effective configuration's order. A resume applies
// the recorded ones in this order: a setting whose value another decides
// (the betas and the weight decay of the run's optimizer; Adafactor's lr,
// only without relative steps) comes after it.
const std::vector<SettingRow>& settings();

// The row of `name`; nullptr when no setting has it.
const SettingRow* find_setting(std::string_view name);

// Where the effective configuration says the setting's value came from:
// TrainConfig::sources' entry, else its default.
std::string setting_source(const SettingRow& row, const TrainConfig& config);

}  // namespace zerodp::train
