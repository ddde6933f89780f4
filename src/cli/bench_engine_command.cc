// SPDX-License-Identifier: Apache-2.0
// zerodp bench engine: step time of each ZeRO stage on N ranks, thread and
// MPI backends, with the ratio to stage 0 measured in the same run. The MPI
// side runs this command again under mpirun (--mpi-child) and reads its
// result lines back.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launch.h"
#include "comm/mpi.h"
#include "comm/world.h"
#include "core/error.h"
#include "model/presets.h"
#include "zero/engine.h"

namespace zerodp::cli {
namespace {

struct BenchEngineOptions {
  std::string model = "gpt-10m";
  int ranks = 2;
  std::vector<int> stages = {0, 1, 2, 3};
  std::string precision = "bf16";
  std::string backend = "both";
  int micro_batch = 4;
  int seq_len = 64;
  int steps = 5;
  bool mpi_child = false;  // internal: this process is one rank of the MPI side
};

struct StageTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

// Times `steps` steps after one warm-up step; a step's time is the slowest
// rank's. Runs on every rank; the result is valid everywhere.
StageTiming time_stage(const model::Model& m, comm::Communicator& comm, const BenchEngineOptions& o, int stage) {
  zero::EngineConfig config;
  config.stage = parse_stage(stage, "[bench engine] --stages");
  config.dtype = Dtype::parse(o.precision);
  config.optimizer.adam.lr = 1e-4;
  config.lr_schedule.max_lr = 1e-4;
  zero::Engine engine(m, comm, config, 7, o.micro_batch, o.seq_len);
  const auto& gpt_vocab = model::resolve_model_config(o.model).gpt.vocab;
  std::mt19937 rng(1234 + comm.rank());
  std::uniform_int_distribution<int32_t> token(0, gpt_vocab - 1);
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
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

std::map<int, StageTiming> run_side(const BenchEngineOptions& o, comm::Backend backend) {
  const auto mc = model::resolve_model_config(o.model);
  ZDP_CHECK(mc.kind == model::ModelKind::kGpt, ConfigError, "[bench engine] --model must be a GPT preset or config");
  const auto m = model::make_model(mc);
  std::map<int, StageTiming> results;
  comm::run_ranks(backend, backend == comm::Backend::kThread ? o.ranks : 0, {}, [&](comm::Communicator& comm) {
    for (int stage : o.stages) {
      const StageTiming t = time_stage(*m, comm, o, stage);
      if (comm.rank() == 0) results[stage] = t;
    }
  });
  return results;
}

void print_table(const BenchEngineOptions& o, const std::string& backend, const std::map<int, StageTiming>& r) {
  const double tokens = static_cast<double>(o.micro_batch) * o.seq_len * o.ranks;
  fmt::print("{:>7}  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>12}\n", "backend", "stage", "median ms", "min ms",
             "max ms", "tokens/s", "vs stage 0");
  const auto base = r.find(0);
  for (const auto& [stage, t] : r) {
    const std::string ratio =
        base != r.end() ? fmt::format("{:.3f}x", t.median_ms / base->second.median_ms) : std::string("-");
    fmt::print("{:>7}  {:>5}  {:>10.1f}  {:>10.1f}  {:>10.1f}  {:>10.0f}  {:>12}\n", backend, stage, t.median_ms,
               t.min_ms, t.max_ms, tokens / (t.median_ms / 1000.0), ratio);
  }
}

void run(const BenchEngineOptions& o) {
  ZDP_CHECK(o.ranks >= 1, ConfigError, "[bench engine] --ranks {} must be at least 1", o.ranks);
  ZDP_CHECK(o.steps >= 1, ConfigError, "[bench engine] --steps {} must be at least 1", o.steps);
  ZDP_CHECK(o.backend == "thread" || o.backend == "mpi" || o.backend == "both", ConfigError,
            "[bench engine] --backend '{}': use thread, mpi or both", o.backend);
  for (int s : o.stages) {
    ZDP_CHECK(s >= 0 && s <= 3, ConfigError, "[bench engine] stage {} does not exist: use 0-3", s);
  }
  if (o.mpi_child) {
    const auto results = run_side(o, comm::Backend::kMpi);
    for (const auto& [stage, t] : results) {
      fmt::print("RESULT {} {} {} {}\n", stage, t.median_ms, t.min_ms, t.max_ms);
    }
    return;
  }
  fmt::print(
      "bench engine: {} on {} ranks, {}, micro-batch {} x seq {}, median of {} steps (after 1 warm-up);\n"
      "a step's time is its slowest rank's\n",
      o.model, o.ranks, o.precision, o.micro_batch, o.seq_len, o.steps);
  if (o.backend != "mpi") print_table(o, "thread", run_side(o, comm::Backend::kThread));
  if (o.backend == "thread") return;
  std::vector<std::string> args{"bench",
                                "engine",
                                "--mpi-child",
                                "--model",
                                o.model,
                                "--ranks",
                                std::to_string(o.ranks),
                                "--precision",
                                o.precision,
                                "--micro-batch",
                                std::to_string(o.micro_batch),
                                "--seq-len",
                                std::to_string(o.seq_len),
                                "--steps",
                                std::to_string(o.steps),
                                "--stages"};
  for (int s : o.stages) args.push_back(std::to_string(s));
  const auto lines = run_and_read_lines(mpirun_command(o.ranks, args, "bench engine"), "bench engine");
  std::map<int, StageTiming> mpi;
  for (const auto& line : lines) {
    std::istringstream in(line);
    std::string tag;
    int stage;
    StageTiming t;
    if (in >> tag >> stage >> t.median_ms >> t.min_ms >> t.max_ms && tag == "RESULT") mpi[stage] = t;
  }
  ZDP_CHECK(mpi.size() == o.stages.size(), Error, "[bench engine] the MPI run returned {} of {} results", mpi.size(),
            o.stages.size());
  print_table(o, "mpi", mpi);
}

}  // namespace

void add_bench_engine_command(CLI::App& bench) {
  auto o = std::make_shared<BenchEngineOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "engine",
      "Step time of each ZeRO stage (forward + backward + collectives + optimizer) on N ranks, with the ratio to\n"
      "stage 0 in the same run. Backend 'both' also runs the stages under 'mpirun -np RANKS' (started for you).");
  cmd->add_option("--model", o->model, "GPT preset or JSON config")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "Ranks (thread ranks, and mpirun -np)")->capture_default_str();
  cmd->add_option("--stages", o->stages, "Stages to time")->capture_default_str()->delimiter(',');
  cmd->add_option("--precision", o->precision, "fp32, fp16 or bf16")->capture_default_str();
  cmd->add_option("--backend", o->backend, "thread, mpi or both")->capture_default_str();
  cmd->add_option("--micro-batch", o->micro_batch, "Sequences per rank")->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps per stage (after one warm-up)")->capture_default_str();
  cmd->add_flag("--mpi-child", o->mpi_child, "Internal: this process is one rank of the MPI side")->group("");
  cmd->callback([o] { run(*o); });
}

}  // namespace zerodp::cli
