// SPDX-License-Identifier: Apache-2.0
// How `zerodp bench comm` shows its rows: the nccl-tests style table, and
// the one-line form in which an OpenMPI baseline run under mpirun hands its
// rows to the process that started it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/comm_bench.h"

namespace zerodp::bench {

// The table: a header naming backend, ranks, dtype and `baseline_note`,
// then one section per collective of `options` with a line per size that
// has a row (time, algbw, busbw, OpenMPI's busbw and ours against it, memcpy
// bandwidth and ours against it). Ends with a newline.
std::string format_comm_table(const CommBenchOptions& options, const std::vector<CommBenchRow>& rows,
                              std::string_view baseline_note);
// The codec rows (bench comm --codec) as a table: ns per element packing and
// unpacking, and the plain bytes per second each.
std::string format_codec_table(const CommBenchOptions& options, const std::vector<CodecBenchRow>& rows);

// The rows as JSON in the format plan::CommMeasurements defines
// (plan/calibration.h: what `zerodp plan --calibrate-comm` reads), indented
// by 2, without a final newline.
std::string format_comm_json(const CommBenchOptions& options, const std::vector<CommBenchRow>& rows,
                             const std::vector<CodecBenchRow>& codec_rows = {});

// "zerodp-baseline <collective> <bytes> <count> <seconds>", no newline.
std::string format_baseline_line(const CommBaselineRow& row);
// The row of a baseline line; nullopt for any other line.
std::optional<CommBaselineRow> parse_baseline_line(const std::string& line);

}  // namespace zerodp::bench
