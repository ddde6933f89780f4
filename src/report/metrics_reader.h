// SPDX-License-Identifier: Apache-2.0
// Reads the JSON Lines file `zerodp train --metrics PATH` writes
// (src/train/metrics.h): one object per optimizer step with
//   step (integer, required), loss (number, or null when not finite;
//   required), val_loss (some steps), lr, grad_norm (null when the step was
//   skipped), loss_scale, skipped, clipped, tokens_per_s, step_seconds,
//   memory: [per rank {category: {current, peak}, ..., model_states: bytes}],
//   comm:   [per rank {collective: {calls, bytes_sent, bytes_received}}].
// Two records are not steps: the first may be {"config": {"precision":
// {"value": "bf16", "source": ...}, ...}} (the run's settings; only the
// precision is read), the last {"final": {"step": N, "val_loss": x}} (the
// validation pass after the last step).
// Unknown keys are ignored (the trainer may add some); known keys of the
// wrong type, bad JSON, a missing/unreadable/empty file are ConfigErrors of
// one line naming the file, the line number and the fix. A last line that is
// not valid JSON (a run killed while writing it) is left out with a warning.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::report {

struct CategoryBytes {
  uint64_t current = 0;
  uint64_t peak = 0;
};

struct RankMemoryRecord {
  std::map<std::string, CategoryBytes> categories;  // "params", "grads", ..., in name order
  std::optional<uint64_t> model_states;
};

struct CollectiveBytes {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

struct StepRecord {
  int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> val_loss;
  std::optional<double> lr;
  std::optional<double> grad_norm;
  std::optional<double> loss_scale;
  bool skipped = false;
  bool clipped = false;
  std::optional<double> tokens_per_s;
  std::optional<double> step_seconds;
  std::vector<RankMemoryRecord> memory;                      // per rank
  std::vector<std::map<std::string, CollectiveBytes>> comm;  // per rank, by collective name
};

// The validation pass after the last step.
struct FinalRecord {
  int64_t step = 0;
  std::optional<double> val_loss;
};

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
