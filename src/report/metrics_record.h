// SPDX-License-Identifier: Apache-2.0
// The metrics record: the one definition of the JSON Lines file that
// `zerodp train --metrics PATH` writes (src/train/metrics.h) and `zerodp
// report` reads (metrics_reader.h). The typed records and both directions,
// to JSON and from JSON, live here and nowhere else.
//
// One JSON object per line, of three kinds (record_kind):
//   config: {"config": {"precision": {"value": "bf16", "source": ...}, ...},
//            "build": {...}}, the first line: the run's effective settings
//            (written by train/effective_config.h; of it only the precision
//            is read, parse_config_precision).
//   step:   one per optimizer step (StepRecord): step (integer, required),
//           loss (number, or null when not finite; required), val_loss (only
//           on steps that computed one), lr, grad_norm (null when the step
//           was skipped), loss_scale, skipped, clipped, tokens_per_s,
//           step_seconds,
//           memory: [per rank {category: {current, peak}, ..., model_states: bytes}],
//           comm:   [per rank {collective: {calls, bytes_sent, bytes_received, seconds}}]
//                   (a collective with no calls in the step is left out),
//           cpu_seconds: [per rank, the step's CPU time of its threads],
//           comm_cpu_seconds: [per rank, of that the comm thread's],
//           comm_wait_seconds: [per rank, the wall time its compute thread
//                   waited for its comm thread: the communication the step
//                   did not hide behind compute],
//           runqueue_seconds: [per rank, the wall time its compute thread
//                   was ready to run while other threads held the cores].
//   final:  {"final": {"step": N, "val_loss": x, "held_out_accuracy": a}},
//           the last line: the validation pass after the last step
//           (FinalRecord; held_out_accuracy only on held-out runs).
// JSON has no NaN or infinity: a non-finite number is written as null and
// read back as absent. Unknown keys are ignored when reading (the trainer
// may add some); a known key of the wrong type is a ConfigError of one line
// naming the file, the line number and the fix (RecordPlace).
// Thread-safety: plain values and pure functions.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::report {

struct CategoryBytes {
  uint64_t current = 0;
  uint64_t peak = 0;
  bool operator==(const CategoryBytes&) const = default;
};

// --offload-optimizer: the rank's file on disk and what its passes read
// and wrote so far (the run's total up to the record).
struct DiskBytes {
  uint64_t bytes = 0;
  uint64_t read = 0;
  uint64_t written = 0;
  bool operator==(const DiskBytes&) const = default;
};

struct RankMemoryRecord {
  std::map<std::string, CategoryBytes> categories;  // "params", "grads", ..., in name order
  std::optional<uint64_t> model_states;
  std::optional<DiskBytes> disk;  // with offload only
  bool operator==(const RankMemoryRecord&) const = default;
};

struct CollectiveBytes {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // The calls' time in the step on the thread that made them (the comm
  // thread with overlap), seconds; absent in files from before it was written.
  std::optional<double> seconds;
  bool operator==(const CollectiveBytes&) const = default;
};

// One rank's counters in one step, by collective name ("all_gather", ...).
using RankCommRecord = std::map<std::string, CollectiveBytes>;

struct StepRecord {
  int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> val_loss;  // only written when present
  std::optional<double> lr;
  std::optional<double> grad_norm;
  std::optional<double> loss_scale;
  bool skipped = false;
  bool clipped = false;
  std::optional<double> tokens_per_s;
  std::optional<double> step_seconds;
  // The step's target tokens with a loss, and those masked (the ignore id:
  // a chat record's prompt and padding), over every rank and micro-batch;
  // absent in files from before they were counted.
  std::optional<int64_t> trained_tokens;
  std::optional<int64_t> masked_tokens;
  std::vector<RankMemoryRecord> memory;  // per rank
  std::vector<RankCommRecord> comm;      // per rank
  // Per rank: the step's CPU time of its threads (the compute thread and
  // its comm thread), seconds; absent in files from before it was written.
  std::vector<double> cpu_seconds;
  // Per rank: of that CPU time, the comm thread's; and the wall time the
  // compute thread waited for the comm thread. Absent in files from before
  // they were written.
  std::vector<double> comm_cpu_seconds;
  std::vector<double> comm_wait_seconds;
  // Per rank: the wall time the compute thread was ready to run but off its
  // core (Linux's schedstat; 0 where the kernel does not keep it).
  std::vector<double> runqueue_seconds;
  bool operator==(const StepRecord&) const = default;
};

// The validation pass after the last step.
struct FinalRecord {
  int64_t step = 0;
  std::optional<double> val_loss;
  std::optional<double> held_out_accuracy;  // only written when present
  bool operator==(const FinalRecord&) const = default;
};

// The line as it is written: keys in name order (nlohmann's objects sort
// them); an absent optional is null, except val_loss of a step and
// held_out_accuracy, which are left out.
nlohmann::json to_json(const StepRecord& record);
// {"final": {...}}.
nlohmann::json to_json(const FinalRecord& record);

// Where a line is, for messages: "m.jsonl line 3".
struct RecordPlace {
  std::string_view file;
  size_t line = 0;
};

// ConfigError "[report] FILE line N: PROBLEM; the file should be what
// `zerodp train --metrics PATH` writes".
[[noreturn]] void record_error(const RecordPlace& at, const std::string& problem);

enum class RecordKind { step, config, final };
// Which record a line (a JSON object) is: one without "step" holding
// "config" or "final" is that; anything else is a step.
RecordKind record_kind(const nlohmann::json& line);

// The parsers take the whole line, a JSON object, and throw record_error.
StepRecord parse_step_record(const nlohmann::json& line, const RecordPlace& at);
FinalRecord parse_final_record(const nlohmann::json& line, const RecordPlace& at);
// The config record's precision ("fp32", "fp16" or "bf16"), lowercase; also
// a plain string; nullopt without one.
std::optional<std::string> parse_config_precision(const nlohmann::json& line, const RecordPlace& at);

}  // namespace zerodp::report
