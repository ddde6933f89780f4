// SPDX-License-Identifier: Apache-2.0
// The memory plan of a training process (src/plan) as the trainer uses it:
// the run's shape for the planner, the limit a plan must fit (--max-memory,
// else this machine's or cgroup's memory shared by the processes on it),
// and the end-of-run line that sets the measured peak next to the plan.
// Thread-safety: pure functions (memory_limit reads /proc and the launch
// environment).
#pragma once

#include <cstdint>
#include <string>

#include "plan/predict.h"
#include "train/train_config.h"

namespace zerodp::train {

// The planner's view of this run on `ranks` ranks; consolidated_copy: rank 0
// gathers one fp32 copy of the model; load_scratch: a resume's or --init-from's read buffer.
plan::RunShape run_shape(const TrainConfig& config, int ranks, bool consolidated_copy, uint64_t load_scratch);

struct MemoryLimit {
  uint64_t bytes = 0;  // UINT64_MAX: no limit known
  std::string source;  // how it was found, for messages
};
MemoryLimit memory_limit(const TrainConfig& config);

// --offload-optimizer and --offload-params: ConfigError (one line, before
// anything is allocated) when a directory is missing, a RAM file system, or
// has less free space than this process's ranks' files in it (the plan's
// disk bytes; both files when the two flags name one directory) and a 64 MiB
// margin. Several processes of a host may share a directory: each checks
// its own files.
void check_offload_room(const TrainConfig& config, const plan::ProcessPrediction& process);

std::string gib(uint64_t bytes);  // "1.50 GiB"
std::string mib(uint64_t bytes);  // "12.25 MiB"

// "Process memory: peak resident ... measured; the plan ... (+x% against the
// measurement)", one line.
std::string format_process_memory(const plan::ProcessPrediction& plan, uint64_t peak, bool mpi);

}  // namespace zerodp::train
