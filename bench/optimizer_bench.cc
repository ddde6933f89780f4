// SPDX-License-Identifier: Apache-2.0
// The optimizers' update alone, paired in one run: one step of AdamW and of
// 8-bit Adam (and Lion) over one shard of 4 Mi fp32 elements (fp32
// gradients, no weight decay), at every SIMD level this CPU and build
// support. Compare a benchmark with AdamW's at the same level in the same
// run; on a shared machine prefer the CPU time and interleave repetitions
// (--benchmark_repetitions=7 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true).
// (docs/optim.md, "The update alone").
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/simd.h"
#include "optim/optimizer.h"

namespace {

using zerodp::SimdLevel;
namespace optim = zerodp::optim;

constexpr size_t kElements = size_t{1} << 22;  // 4 Mi

void bench_step(benchmark::State& state, optim::OptimizerKind kind, SimdLevel level) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> params(kElements), grads(kElements);
  for (float& p : params) p = normal(gen);
  for (float& g : grads) g = normal(gen) * 1e-2f;
  optim::OptimizerConfig config;
  config.kind = kind;
  optim::ShardOptions options;
  options.simd = level;
  const std::unique_ptr<optim::Optimizer> opt = optim::make_optimizer(config, kElements, options);
  for (auto _ : state) {
    opt->step(params, grads, 1e-3);
    benchmark::DoNotOptimize(params.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kElements));
}

}  // namespace

int main(int argc, char** argv) {
  for (SimdLevel level : zerodp::supported_simd_levels()) {
    const char* level_name = zerodp::simd_level_name(level);
    for (const auto& [name, kind] :
         {std::pair{"adamw", optim::OptimizerKind::kAdamW}, std::pair{"adam8bit", optim::OptimizerKind::kAdam8bit},
          std::pair{"lion", optim::OptimizerKind::kLion}}) {
      std::string label(name);
      label.append("/").append(level_name);
      benchmark::RegisterBenchmark(label.c_str(), bench_step, kind, level)->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
