// SPDX-License-Identifier: Apache-2.0
// The ZeRO stage benchmark behind `zerodp bench engine`: the step time
// (forward + backward + collectives + optimizer) of each stage on N ranks of
// one backend, with random tokens. Each stage times `steps` steps after one
// warm-up step; a step's time is its slowest rank's.
//
// Thread-safety: call from one thread; run_engine_bench starts its own
// ranks (thread backend) or runs as this process's rank (under mpirun).
#pragma once

#include <string>
#include <vector>

#include "comm/world.h"
#include "core/dtype.h"

namespace zerodp::bench {

struct EngineBenchOptions {
  std::string model = "gpt-10m";  // a GPT preset or JSON config (model::resolve_model_config)
  int ranks = 2;                  // thread ranks; under mpirun, the number of processes
  std::vector<int> stages{0, 1, 2, 3};
  Dtype precision = Dtype::bf16();
  int micro_batch = 4;  // sequences per rank
  int seq_len = 64;
  int steps = 5;  // timed steps per stage
};

struct StageTiming {
  int stage = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

// ConfigError unless ranks >= 1, steps >= 1 and every stage is 0-3.
void check_engine_bench_options(const EngineBenchOptions& options);

// Times each stage of `options.stages` on `backend`'s ranks; one timing per
// distinct stage, in increasing stage order. ConfigError when the model is
// not a GPT. Under mpirun, every process gets the same timings.
std::vector<StageTiming> run_engine_bench(const EngineBenchOptions& options, comm::Backend backend);

}  // namespace zerodp::bench
