// SPDX-License-Identifier: Apache-2.0
// The run settings of `zerodp train`, each declared once as a row: its name
// (the flag's name without dashes, as TrainConfig::sources keys it), typed
// access to its value in a TrainConfig (as JSON, the form a checkpoint
// records), its flag and --help text, what a resume does with it, and how
// the effective configuration prints it. The resume table
// (resume_config.cc), the effective configuration (effective_config.cc) and
// the flags of `zerodp train` (src/cli/train_command.cc) are read off these
// rows; adding a setting is adding its row (settings.cc, settings_optim.cc) and the code that
// uses its value.
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

// The DeepSpeed config key that sets a setting (`--config`), as a dotted
// path: "gradient_clipping", "zero_optimization.stage". Messages name it
// (TrainConfig::spelled), --help shows it beside the flag, and a `direct`
// key, whose JSON value is the setting's value as its flag takes it, is
// read by the DeepSpeed reader from the row alone (ds_config.cc:
// apply_direct_keys). `auto_derived`: "auto" in it keeps what a flag gives
// or the default (Hugging Face's Trainer fills these from its own
// arguments); elsewhere "auto" is named among those nothing derives. The
// other keys (types, sections, one key setting several fields, a check
// whose message names the file) have their lines in ds_config*.cc.
struct DsKey {
  std::string_view path = {};  // empty: DeepSpeed has no key for it
  bool direct = false;
  bool auto_derived = false;
  // For a key two rows share (optimizer.params.eps: Adam's one number,
  // Adafactor's two): the row the key sets for this configuration, whose
  // optimizer type is read first. Null: the row the path names.
  bool (*applies)(const TrainConfig&) = nullptr;
};

// How a user spells a setting: the `zerodp train` flag, which the CLI
// declares from it, and the DeepSpeed key.
struct FlagSpec {
  std::string_view spelling = {};  // "--micro-batch"; empty: no flag, or one the CLI declares by hand
  std::string_view help = {};      // its --help text
  bool show_default = true;        // whether --help shows the default value
  // A count whose field holds 0 for "not given": a flag's 0 is refused.
  bool count = false;
  DsKey ds = {};
};

// The C++ type of a setting's value (and of its flag's argument).
enum class ValueType : uint8_t { kBool, kInt, kInt64, kUint32, kUint64, kDouble, kString, kPair };

struct SettingRow;
// Whether and how the effective configuration shows a setting for a run of
// `ranks` ranks (REQUIRES the batch resolved); nullopt: not shown for this run.
using ShowFn = std::function<std::optional<Shown>(const SettingRow&, const TrainConfig&, int ranks)>;

// The names of the settings that code outside their rows refers to (the
// batch rule in train_config.cc names where a derived micro-batch and
// accumulation came from; a resume turns the accumulation into micro-batches
// per step; the schedule's peak is read from several DeepSpeed keys), each
// spelled once: its row's name.
inline constexpr const char* kMicroBatchSetting = "micro-batch";
inline constexpr const char* kGradAccumSetting = "grad-accum";
inline constexpr const char* kLrSetting = "lr";

struct SettingRow {
  std::string_view name;  // the flag's name without dashes: "lr", "stage"
  FlagSpec flag;
  ValueType type = ValueType::kString;
  ResumePolicy resume = ResumePolicy::kNotRecorded;
  DefaultFrom defaults = DefaultFrom::kRun;
  // The value as its JSON form (a checkpoint's record keeps it so); null
  // for a setting only printed (derived from others).
  std::function<nlohmann::json(const TrainConfig&)> get;
  // Sets the value from that JSON form, and whatever the setting decides
  // with it (the weight decay of every optimizer, "given" for the
  // accumulation); null for a setting neither a resume nor a flag sets.
  std::function<void(TrainConfig&, const nlohmann::json&)> set;
  ShowFn show;  // null: not in the effective configuration
  // The setting's own check of its value, whatever set it (a flag, the
  // config file, a checkpoint): ConfigError naming it as the user spelled
  // it (check_setting_values). Null: every value of its type is valid.
  // Checks between settings are value_checks.cc's.
  std::function<void(const SettingRow&, const TrainConfig&)> check;

  bool recorded() const { return resume != ResumePolicy::kNotRecorded; }
};

// Every setting, in the effective configuration's order. A resume applies
// the recorded ones in this order: a setting whose value another decides
// (the betas and the weight decay of the run's optimizer; Adafactor's lr,
// only without relative steps) comes after it.
const std::vector<SettingRow>& settings();

// The row of `name`; nullptr when no setting has it.
const SettingRow* find_setting(std::string_view name);

// Sets the setting from its flag's value (JSON of `row.type`), after the
// flag's own check (a count must be at least 1). ConfigError naming the flag.
void set_from_flag(const SettingRow& row, TrainConfig& config, const nlohmann::json& value);

// Runs every row's own check (SettingRow::check) on the configuration.
void check_setting_values(const TrainConfig& config);

// Where the effective configuration says the setting's value came from:
// TrainConfig::sources' entry, else its default.
std::string setting_source(const SettingRow& row, const TrainConfig& config);

}  // namespace zerodp::train
