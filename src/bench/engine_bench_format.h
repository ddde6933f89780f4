// SPDX-License-Identifier: Apache-2.0
// How `zerodp bench engine` shows its timings: the table, and the one-line
// form in which the MPI side (the same command under mpirun) hands a stage's
// timing to the process that started it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/engine_bench.h"

namespace zerodp::bench {

// A header line and one line per timing: backend, stage, median/min/max ms,
// tokens/s at the median (micro_batch * seq_len * ranks per step) and the
// median against stage 0's ("-" without a stage 0). Ends with a newline.
std::string format_engine_table(const EngineBenchOptions& options, std::string_view backend,
                                const std::vector<StageTiming>& timings);

// "RESULT <stage> <median_ms> <min_ms> <max_ms>" (shortest round-trip
// decimals), no newline.
std::string format_stage_line(const StageTiming& timing);
// The timing of a result line; nullopt for any other line.
std::optional<StageTiming> parse_stage_line(const std::string& line);

}  // namespace zerodp::bench
