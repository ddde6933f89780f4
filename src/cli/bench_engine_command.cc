// SPDX-License-Identifier: Apache-2.0
// zerodp bench engine: step time of each ZeRO stage on N ranks, thread and
// MPI backends, with the ratio to stage 0 measured in the same run (the
// measuring and the table: bench/engine_bench.h). The MPI side runs this
// command again under mpirun (--mpi-child) and reads its result lines back.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/engine_bench.h"
#include "bench/engine_bench_format.h"
#include "cli/commands.h"
#include "cli/mpi_launch.h"
#include "core/error.h"

namespace zerodp::cli {
namespace {

// The flags as given; the MPI side gets them back as given.
struct BenchEngineFlags {
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

// Everything but the precision, which is parsed where a side runs.
bench::EngineBenchOptions to_options(const BenchEngineFlags& f) {
  bench::EngineBenchOptions o;
  o.model = f.model;
  o.ranks = f.ranks;
  o.stages = f.stages;
  o.micro_batch = f.micro_batch;
  o.seq_len = f.seq_len;
  o.steps = f.steps;
  return o;
}

std::vector<bench::StageTiming> run_side(bench::EngineBenchOptions o, const BenchEngineFlags& f,
                                         comm::Backend backend) {
  o.precision = Dtype::parse(f.precision);
  return bench::run_engine_bench(o, backend);
}

std::vector<bench::StageTiming> run_mpi_side(const BenchEngineFlags& f) {
  std::vector<std::string> args{"bench",
                                "engine",
                                "--mpi-child",
                                "--model",
                                f.model,
                                "--ranks",
                                std::to_string(f.ranks),
                                "--precision",
                                f.precision,
                                "--micro-batch",
                                std::to_string(f.micro_batch),
                                "--seq-len",
                                std::to_string(f.seq_len),
                                "--steps",
                                std::to_string(f.steps),
                                "--stages"};
  for (int s : f.stages) args.push_back(std::to_string(s));
  const auto lines = run_and_read_lines(mpirun_command(f.ranks, args, "bench engine"), "bench engine");
  std::map<int, bench::StageTiming> by_stage;
  for (const auto& line : lines) {
    if (const auto t = bench::parse_stage_line(line)) by_stage[t->stage] = *t;
  }
  ZDP_CHECK(by_stage.size() == f.stages.size(), Error, "[bench engine] the MPI run returned {} of {} results",
            by_stage.size(), f.stages.size());
  std::vector<bench::StageTiming> timings;
  timings.reserve(by_stage.size());
  for (const auto& [stage, t] : by_stage) timings.push_back(t);
  return timings;
}

void run(const BenchEngineFlags& f) {
  const bench::EngineBenchOptions o = to_options(f);
  ZDP_CHECK(f.backend == "thread" || f.backend == "mpi" || f.backend == "both", ConfigError,
            "[bench engine] --backend '{}': use thread, mpi or both", f.backend);
  bench::check_engine_bench_options(o);
  if (f.mpi_child) {
    for (const auto& t : run_side(o, f, comm::Backend::kMpi)) fmt::print("{}\n", bench::format_stage_line(t));
    return;
  }
  fmt::print(
      "bench engine: {} on {} ranks, {}, micro-batch {} x seq {}, median of {} steps (after 1 warm-up);\n"
      "a step's time is its slowest rank's\n",
      f.model, f.ranks, f.precision, f.micro_batch, f.seq_len, f.steps);
  if (f.backend != "mpi") {
    fmt::print("{}", bench::format_engine_table(o, "thread", run_side(o, f, comm::Backend::kThread)));
  }
  if (f.backend == "thread") return;
  fmt::print("{}", bench::format_engine_table(o, "mpi", run_mpi_side(f)));
}

}  // namespace

void add_bench_engine_command(CLI::App& bench) {
  auto o = std::make_shared<BenchEngineFlags>();
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
