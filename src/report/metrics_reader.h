// SPDX-License-Identifier: Apache-2.0
// Reads the JSON Lines file `zerodp train --metrics PATH` writes: the
// format and its typed records (StepRecord, FinalRecord, ...) are defined
// once, in metrics_record.h; this file handles the file and its lines.
// A first {"config": ...} record gives the run's precision, a last
// {"final": ...} record the validation pass after the last step, every
// other line is a step. Bad JSON, a line that is not a record of the format,
// a missing/unreadable/empty file are ConfigErrors of one line naming the
// file, the line number and the fix. A last line that is not valid JSON (a
// run killed while writing it) is left out with a warning.
// Thread-safety: pure functions.
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/metrics_record.h"

namespace zerodp::report {

struct RunMetrics {
  std::string source;  // the file name, for titles
  std::vector<StepRecord> steps;
  std::optional<std::string> precision;  // "fp32", "fp16" or "bf16" (lowercase), from the config record
  std::optional<FinalRecord> final_record;
  // What the reader stepped over, one line each, naming the file and line:
  // a last line cut short.
  std::vector<std::string> warnings;
};

// `name` is used in messages ("m.jsonl line 3: ...").
RunMetrics parse_metrics(std::istream& in, std::string_view name);
// ConfigError when the file cannot be opened.
RunMetrics read_metrics(const std::string& path);

}  // namespace zerodp::report
