// SPDX-License-Identifier: Apache-2.0
#include "bench/model_bench_format.h"

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>

namespace zerodp::bench {
namespace {

// The rates every form shows, derived from the result's sums.
struct Rates {
  double steps = 0;
  double step_s = 0;       // mean seconds per step
  double step_flops = 0;   // model FLOPs per step
  double tps = 0;          // positions/s, fastest step
  double tps_mean = 0;     // positions/s, mean step
  double tps_fb = 0;       // positions/s, fastest forward + backward
  double gemm_gflops = 0;  // the run's precision's n x n x n rate: the bound's
  double bound_tps = 0;    // positions/s at that rate
  double achieved = 0;     // GFLOP/s of the fastest forward + backward
};

Rates rates(const ModelBenchResult& r) {
  Rates x;
  const double positions = static_cast<double>(r.positions);
  x.steps = r.steps;
  x.step_s = (r.forward_s + r.backward_s + r.adamw_s) / x.steps;
  x.step_flops = r.train_flops_per_position * positions;
  x.tps = positions / r.best_step_s;
  x.tps_mean = positions / x.step_s;
  x.tps_fb = positions / r.best_fwd_bwd_s;
  x.gemm_gflops = r.compute == kernels::Compute::kBf16 ? r.bf16_gemm_gflops : r.sgemm_gflops;
  x.bound_tps = x.gemm_gflops * 1e9 / r.train_flops_per_position;
  x.achieved = x.step_flops / r.best_fwd_bwd_s / 1e9;
  return x;
}

}  // namespace

std::string format_model_bench_json(const ModelBenchResult& r) {
  const Rates x = rates(r);
  nlohmann::json j;
  j["model"] = r.model;
  j["describe"] = r.describe;
  j["num_params"] = r.num_params;
  j["batch"] = r.batch;
  j["seq_len"] = r.seq_len;
  j["checkpointing"] = r.checkpointing;
  j["steps"] = r.steps;
  j["loss"] = r.loss;
  j["clock"] = std::string(clock_name(r.clock));
  j["blas_core"] = r.blas.core;  // the sgemm rate is this kernel's
  j["blas_note"] = r.blas.note;
  j["sgemm_gflops"] = r.sgemm_gflops;
  j["compute"] = kernels::compute_name(r.compute);
  j["simd"] = r.simd;
  j["bf16_units"] = r.bf16_units;
  j["bf16_gemm_gflops"] = r.bf16_gemm_gflops;
  j["model_sgemm_gflops"] = r.model_sgemm_gflops;
  j["model_bf16_gflops"] = r.model_bf16_gflops;
  j["train_flops_per_position"] = r.train_flops_per_position;
  j["positions_per_s"] = x.tps;
  j["positions_per_s_mean"] = x.tps_mean;
  j["positions_per_s_fwd_bwd"] = x.tps_fb;
  j["bound_positions_per_s"] = x.bound_tps;
  j["gflops_fwd_bwd"] = x.achieved;
  j["seconds_per_step"] = {
      {"forward", r.forward_s / x.steps}, {"backward", r.backward_s / x.steps}, {"adamw", r.adamw_s / x.steps}};
  for (int k = 0; k < static_cast<int>(kernels::KernelKind::kCount); ++k) {
    const auto kind = static_cast<kernels::KernelKind>(k);
    j["kernels"][std::string(kernels::kernel_name(kind))] = r.profile.entry(kind).seconds / x.steps;
  }
  j["activation_bytes"] = r.activation_bytes;
  j["scratch_bytes"] = r.scratch_bytes;
  return j.dump(2);
}

std::string format_model_bench_text(const ModelBenchResult& r) {
  const Rates x = rates(r);
  const double steps = x.steps;
  const char* unit = r.is_gpt ? "tokens" : "samples";
  std::string out;
  auto add = std::back_inserter(out);
  fmt::format_to(add, "model        {} ({})\n", r.model, r.describe);
  fmt::format_to(add, "batch        B={} T={} ({} {} per step), checkpointing {}, one rank, one thread, {} products\n",
                 r.batch, r.seq_len, r.positions, unit, r.checkpointing ? "on" : "off",
                 kernels::compute_name(r.compute));
  fmt::format_to(add, "openblas     {} core={} threads={}\n", r.blas.config, r.blas.core, r.blas.threads);
  if (!r.blas.note.empty()) fmt::format_to(add, "note         {}\n", r.blas.note);
  fmt::format_to(add, "clock        {}\n",
                 r.clock == ClockKind::kThreadCpu
                     ? "the thread's CPU time (--clock cpu: the load of other processes left out)"
                     : "wall (--clock wall)");
  fmt::format_to(add, "sgemm        {:.1f} GFLOP/s (n={}, same run)\n", r.sgemm_gflops, r.sgemm_size);
  fmt::format_to(add, "bf16 GEMM    {:.1f} GFLOP/s (n={}, same run) = {:.2f}x sgemm, {}\n", r.bf16_gemm_gflops,
                 r.sgemm_size, r.bf16_gemm_gflops / r.sgemm_gflops,
                 r.bf16_units ? fmt::format("on the bf16 units (SIMD {})", r.simd)
                              : fmt::format("in portable C++ (SIMD {} has no bf16 units)", r.simd));
  fmt::format_to(add, "model GEMMs  sgemm {:.1f}, bf16 {:.1f} GFLOP/s = {:.2f}x (the model's product shapes)\n",
                 r.model_sgemm_gflops, r.model_bf16_gflops, r.model_bf16_gflops / r.model_sgemm_gflops);
  fmt::format_to(add, "model FLOPs  {:.3f} GFLOP per step ({:.1f} MFLOP per {})\n", x.step_flops / 1e9,
                 r.train_flops_per_position / 1e6, r.is_gpt ? "token" : "sample");
  fmt::format_to(add, "\n");
  fmt::format_to(add,
                 "train        {:9.1f} {}/s  (forward + backward + AdamW, best of {} steps: {:.1f} ms; mean {:.1f} "
                 "{}/s)\n",
                 x.tps, unit, r.steps, r.best_step_s * 1e3, x.tps_mean, unit);
  const char* gemm = r.compute == kernels::Compute::kBf16 ? "bf16 GEMM" : "sgemm";
  fmt::format_to(add, "fwd+bwd      {:9.1f} {}/s  ({:.1f} GFLOP/s = {:.0f}% of {})\n", x.tps_fb, unit, x.achieved,
                 100 * x.achieved / x.gemm_gflops, gemm);
  fmt::format_to(add, "{:<13}{:9.1f} {}/s  (model FLOPs at the {} rate)\n",
                 r.compute == kernels::Compute::kBf16 ? "bf16 bound" : "sgemm bound", x.bound_tps, unit, gemm);
  fmt::format_to(add,
                 "targets      the step at {:.0f}% of the {} bound (target >= {}%), fwd+bwd at {:.0f}% of the "
                 "{} rate\n             (target >= 85%); train vs PyTorch: run /usr/bin/python3 "
                 "tools/bench_torch_gpt.py on the same\n             machine (target >= 1.2x)\n",
                 100 * x.tps / x.bound_tps, gemm, r.compute == kernels::Compute::kBf16 ? 70 : 75,
                 100 * x.tps_fb / x.bound_tps, gemm);
  fmt::format_to(add, "loss         {:.4f}\n", r.loss);
  fmt::format_to(add, "\nmean step    forward {:.1f} ms, backward {:.1f} ms, AdamW {:.1f} ms\n",
                 1e3 * r.forward_s / steps, 1e3 * r.backward_s / steps, 1e3 * r.adamw_s / steps);
  fmt::format_to(add, "{:<14}{:>10}{:>9}{:>11}\n", "kernel", "ms/step", "share", "GFLOP/s");
  for (int k = 0; k < static_cast<int>(kernels::KernelKind::kCount); ++k) {
    const auto kind = static_cast<kernels::KernelKind>(k);
    const auto& e = r.profile.entry(kind);
    if (e.calls == 0) continue;
    const std::string rate = e.flops > 0 ? fmt::format("{:.1f}", e.flops / e.seconds / 1e9) : "";
    fmt::format_to(add, "{:<14}{:>10.2f}{:>8.1f}%{:>11}\n", kernels::kernel_name(kind), 1e3 * e.seconds / steps,
                   100 * e.seconds / (steps * x.step_s), rate);
  }
  fmt::format_to(add, "{:<14}{:>10.2f}{:>8.1f}%\n", "adamw", 1e3 * r.adamw_s / steps,
                 100 * r.adamw_s / (steps * x.step_s));
  const double other = steps * x.step_s - r.profile.total_seconds() - r.adamw_s;
  fmt::format_to(add, "{:<14}{:>10.2f}{:>8.1f}%\n", "other", 1e3 * other / steps, 100 * other / (steps * x.step_s));
  fmt::format_to(add, "\nworkspace    {:.1f} MiB activations + {:.1f} MiB scratch\n", r.activation_bytes / 1048576.0,
                 r.scratch_bytes / 1048576.0);
  return out;
}

}  // namespace zerodp::bench
