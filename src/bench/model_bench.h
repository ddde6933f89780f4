// SPDX-License-Identifier: Apache-2.0
// The model throughput benchmark behind `zerodp bench model`: one rank, one
// thread, training steps of a model (forward + backward + the engine's
// AdamW on the whole model; the products in fp32 or bf16, --compute) with a
// per-kernel time profile, next to the sgemm and bf16 GEMM rates measured
// in the same run through the same gemm() and gemm_bf16() the model uses,
// as n x n x n products and at the model's own product shapes. The rate of
// the run's precision bounds the model: bound tokens/s = GEMM FLOP/s /
// (model FLOPs per token). Every figure is timed on one clock
// (core/clock.h): the thread's CPU time by default, which on a shared
// machine leaves out the time other processes held the core, so the ratios
// hold under load; or the wall clock.
//
// Thread-safety: call from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "kernels/compute.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "kernels/profile.h"

namespace zerodp::bench {

struct ModelBenchOptions {
  std::string model = "gpt-bench";  // preset name, model.json or inline JSON (model::resolve_model_config)
  int batch = 4;                    // micro batch
  int seq = 64;                     // sequence length (GPT; an MLP's positions are its samples)
  int steps = 5;                    // timed steps
  int warmup = 1;                   // untimed steps first
  bool checkpointing = false;       // recompute each block in backward
  uint64_t seed = 1;                // initialisation and batch
  int sgemm_size = 1024;            // n of the n x n x n sgemm and bf16 GEMM references
  kernels::Compute compute = kernels::Compute::kFp32;  // the model's products
  ClockKind clock = ClockKind::kThreadCpu;             // what every figure is timed on
};

struct ModelBenchResult {
  std::string model;     // the config's name
  std::string describe;  // Model::describe()
  bool is_gpt = false;   // positions are tokens (GPT) or samples
  size_t num_params = 0;
  int batch = 0, seq_len = 0;  // seq_len 1 for an MLP
  size_t positions = 0;        // batch * seq_len per step
  bool checkpointing = false;
  int steps = 0;   // timed steps
  float loss = 0;  // the last step's
  kernels::BlasInfo blas;
  int sgemm_size = 0;
  ClockKind clock = ClockKind::kThreadCpu;
  double sgemm_gflops = 0;  // best before and after the model steps (the machine may be shared)
  kernels::Compute compute = kernels::Compute::kFp32;
  double bf16_gemm_gflops = 0;  // gemm_bf16, n x n x n, best before and after
  bool bf16_units = false;      // whether gemm_bf16 ran on the CPU's bf16 units
  std::string simd;             // the active SIMD level
  // Both precisions at the model's product shapes (each linear's forward
  // and two backward products, each shape once).
  double model_sgemm_gflops = 0, model_bf16_gflops = 0;
  double train_flops_per_position = 0;
  // Sums over the timed steps (seconds).
  double forward_s = 0, backward_s = 0, adamw_s = 0;
  kernels::Profile profile;
  // The fastest timed step, whole and forward + backward: on a shared
  // machine the least disturbed one.
  double best_step_s = 0, best_fwd_bwd_s = 0;
  size_t activation_bytes = 0, scratch_bytes = 0;
};

// Best-of-3 GFLOP/s of the products of `shapes` (forward, input gradient
// and weight gradient of each) at `compute`, timed on `clock`.
double measure_model_gemm_gflops(const std::vector<kernels::LinearShape>& shapes, kernels::Compute compute,
                                 ClockKind clock = ClockKind::kThreadCpu);
// Best-of-5 GFLOP/s of an n x n x n bf16 product through kernels::gemm_bf16.
double measure_bf16_gemm_gflops(int n, ClockKind clock = ClockKind::kThreadCpu);
// Best-of-5 GFLOP/s of an n x n x n sgemm through kernels::gemm, timed on
// `clock`.
double measure_sgemm_gflops(int n, ClockKind clock = ClockKind::kThreadCpu);

// ConfigError for steps < 1, warmup < 0 or a model that does not resolve.
ModelBenchResult run_model_bench(const ModelBenchOptions& options);

}  // namespace zerodp::bench
