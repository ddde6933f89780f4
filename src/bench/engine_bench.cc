// SPDX-License-Identifier: Apache-2.0
#include "bench/engine_bench.h"
#include "model/gpt_family.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "core/error.h"
#include "core/stage.h"
#include "model/presets.h"
#include "zero/engine.h"

namespace zerodp::bench {
namespace {

// Times `steps` steps after one warm-up step; a step's time is the slowest
// rank's. Runs on every rank; the result is valid everywhere.
StageTiming time_stage(const model::Model& m, int vocab, comm::Communicator& comm, const EngineBenchOptions& o,
                       Stage stage) {
  zero::EngineConfig config;
  config.stage = stage;
  config.dtype = o.precision;
  config.lr_schedule.max_lr = 1e-4;
  zero::Engine engine(m, comm, config, 7, o.micro_batch, o.seq_len);
  std::mt19937 rng(1234 + comm.rank());
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(o.micro_batch) * o.seq_len), targets(tokens.size());
  const zero::BatchFeeder feed = [&](model::Workspace& ws, int) {
    for (auto& t : tokens) t = token(rng);
    for (auto& t : targets) t = token(rng);
    model::Batch b;
    b.tokens = tokens;
    b.targets = targets;
    ws.set_batch(b);
  };
  engine.train_step(feed);  // warm-up: first touches of every buffer
  std::vector<double> ms;
  for (int s = 0; s < o.steps; ++s) {
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    engine.train_step(feed);
    const double mine = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ms.push_back(comm.all_reduce_scalar(mine, comm::ReduceOp::kMax));
  }
  std::sort(ms.begin(), ms.end());
  return {stage_number(stage), ms[ms.size() / 2], ms.front(), ms.back()};
}

}  // namespace

void check_engine_bench_options(const EngineBenchOptions& o) {
  ZDP_CHECK(o.ranks >= 1, ConfigError, "[bench engine] --ranks {} must be at least 1", o.ranks);
  ZDP_CHECK(o.steps >= 1, ConfigError, "[bench engine] --steps {} must be at least 1", o.steps);
  for (int s : o.stages) parse_stage(s, "[bench engine] --stages");
}

std::vector<StageTiming> run_engine_bench(const EngineBenchOptions& o, comm::Backend backend) {
  check_engine_bench_options(o);
  const auto mc = model::resolve_model_config(o.model);
  const model::GptConfig& gpt = model::require_gpt(mc, "bench engine");
  const auto m = model::make_model(mc);
  std::map<int, StageTiming> results;  // a stage named twice is timed twice and shown once
  comm::run_ranks(backend, backend == comm::Backend::kThread ? o.ranks : 0, {}, [&](comm::Communicator& comm) {
    for (int stage : o.stages) {
      const StageTiming t = time_stage(*m, gpt.vocab, comm, o, parse_stage(stage, "[bench engine] --stages"));
      if (comm.rank() == 0) results[stage] = t;
    }
  });
  std::vector<StageTiming> rows;
  rows.reserve(results.size());
  for (const auto& [stage, t] : results) rows.push_back(t);
  return rows;
}

}  // namespace zerodp::bench
