// SPDX-License-Identifier: Apache-2.0
// `zerodp bench model`: one rank, one thread, training throughput of a model
// (forward + backward + AdamW; fp32 or bf16 products), next to the sgemm and
// bf16 GEMM rates measured in the same run, with a per-kernel time profile
// (bench/model_bench.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "bench/model_bench.h"
#include "bench/model_bench_format.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/error.h"
#include "kernels/compute.h"

namespace zerodp::cli {
namespace {

struct BenchModelFlags {
  bench::ModelBenchOptions options;
  std::string clock = "cpu";
  std::string compute = "fp32";
  bool json = false;
};

void run(BenchModelFlags f) {
  const std::optional<ClockKind> clock = parse_clock_kind(f.clock);
  ZDP_CHECK(clock.has_value(), ConfigError, "bench model --clock '{}': use cpu or wall", f.clock);
  f.options.clock = *clock;
  const std::optional<kernels::Compute> compute = kernels::parse_compute(f.compute);
  ZDP_CHECK(compute.has_value(), ConfigError, "bench model --compute '{}': use fp32 or bf16", f.compute);
  f.options.compute = *compute;
  const bench::ModelBenchResult result = bench::run_model_bench(f.options);
  if (f.json) {
    fmt::print("{}\n", bench::format_model_bench_json(result));
  } else {
    fmt::print("{}", bench::format_model_bench_text(result));
  }
}

}  // namespace

void add_bench_model_command(CLI::App& bench) {
  auto flags = std::make_shared<BenchModelFlags>();
  bench::ModelBenchOptions* opts = &flags->options;
  auto* cmd = bench.add_subcommand(
      "model", "Training throughput of one model on one rank and one thread (forward + backward + AdamW), vs sgemm");
  cmd->add_option("--model", opts->model, "Preset name, model.json, or an inline JSON config")->capture_default_str();
  cmd->add_option("--batch,-B", opts->batch, "Micro batch size")->capture_default_str();
  cmd->add_option("--seq,-T", opts->seq, "Sequence length (GPT)")->capture_default_str();
  cmd->add_option("--steps", opts->steps, "Timed steps")->capture_default_str();
  cmd->add_option("--warmup", opts->warmup, "Untimed warm-up steps")->capture_default_str();
  cmd->add_flag("--checkpointing", opts->checkpointing, "Recompute each block in backward");
  cmd->add_option("--seed", opts->seed, "Initialisation seed")->capture_default_str();
  cmd->add_option("--clock", flags->clock,
                  "What every figure is timed on: cpu (the thread's CPU time: on a shared machine the time other "
                  "processes held the core is left out) or wall")
      ->capture_default_str();
  cmd->add_option("--compute", flags->compute,
                  "The model's matrix products: fp32 (sgemm) or bf16 (bf16 operands, fp32 sums; zerodp train "
                  "--compute)")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "Print the results as JSON");
  cmd->callback([flags] { run(*flags); });
}

}  // namespace zerodp::cli
