// SPDX-License-Identifier: Apache-2.0
// Per-rank memory of a `zerodp train` run, predicted before anything is
// allocated: src/model's ModelConfig (a GPT or an MLP) and the run's shape
// in, the engine's ledger categories out (engine_memory.h), with the
// activations from the tuned per-tensor list (activations.h). This is what
// `zerodp train --max-memory BYTES` checks, and what
// tests/plan/plan_vs_ledger_test.cc holds equal to zero::Engine's ledger.
//
//   plan::RunShape run{.stage = Stage::k1, .ranks = 4, .dtype = Dtype::bf16(),
//                      .optimizer = engine_config.optimizer,
//                      .micro_batch = 8, .seq_len = 128, .grad_accum = 2};
//   plan::check_memory_fits(model_config, run, max_bytes);  // ConfigError naming a stage that fits
//
// Thread-safety: all functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "model/presets.h"
#include "optim/optimizer.h"
#include "plan/engine_memory.h"
#include "plan/memory_model.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

// Everything about a run that changes per-rank memory.
struct RunShape {
  Stage stage = Stage::k0;
  int ranks = 1;
  Dtype dtype = Dtype::fp32();            // params, grads and communication
  optim::OptimizerConfig optimizer = {};  // only its kind and momentum matter (K)
  int micro_batch = 1;
  int seq_len = 1;             // tokens per sample (ignored by the MLP)
  bool checkpointing = false;  // activation checkpointing (GPT)
  bool bf16_compute = false;   // --compute bf16: the products' inputs kept as bf16 (model::WorkspaceOptions)
  int grad_accum = 1;
  bool prefetch = true;                 // zero::EngineConfig::prefetch
  uint64_t bucket_elements = 25 << 20;  // zero::EngineConfig::bucket_elements (stage 0)
  bool consolidated_copy = false;       // rank 0 gathers an fp32 copy at the end (sample, held-out answers)
  // A resume's read buffer (ckpt::read_scratch_bytes) or --init-from's
  // (weights::InitWeights::scratch_bytes).
  uint64_t load_scratch = 0;
  // zero::EngineConfig's compressed collectives (their scratch, "comm").
  comm::Quantization quantize_weights = comm::Quantization::kNone;
  comm::Quantization quantize_grads = comm::Quantization::kNone;
  uint32_t quantize_block = comm::kDefaultQuantBlock;  // elements per scale, for both
  int shard_group = 0;             // zero::EngineConfig::shard_group_size (hybrid sharding); 0 = ranks
  bool offload_optimizer = false;  // zero::EngineConfig::offload_optimizer_dir given
  bool offload_params = false;     // zero::EngineConfig::offload_params_dir given (stage 3, bf16/fp16)
};

// The ranks one process runs: all of them on threads, its own one under MPI.
struct LocalRanks {
  int first = 0;
  int count = 1;
};

// One process's memory: the process baseline (binary, libraries, OpenBLAS,
// MPI, the data) measured at start, and its ranks' memory at the worst of
// the three moments they pass together (the constructors' fill, a step with
// the comm threads lagging, the end with rank 0's consolidated copy and
// sample workspace), with the allocator's rounding.
struct ProcessPrediction {
  std::vector<RankPrediction> ranks;
  uint64_t baseline = 0;
  uint64_t ranks_total() const;
  uint64_t allocator() const;  // the sum of the ranks' allocator rounding
  uint64_t total() const { return ranks_total() + baseline; }
};

// gpt_shape (src/model's GPT config as plan's shape) is in plan/model_shape.h.

// The units and ops of the model, in the engine's order: GPT embedding,
// blocks, final layernorm, then the tied LM head reading the embedding
// unit again; MLP one unit and op per layer.
UnitSchedule unit_schedule(const model::ModelConfig& config);

// Bytes of the model's workspace (Workspace::total_bytes()) for this run.
// ConfigError on a bad micro-batch or sequence length.
uint64_t predict_activation_bytes(const model::ModelConfig& config, const RunShape& run);

// The busiest rank (rank 0: it holds the larger shard of every unit).
RankPrediction predict_rank(const model::ModelConfig& config, const RunShape& run);
// Rank `rank` (0 <= rank < run.ranks).
RankPrediction predict_rank(const model::ModelConfig& config, const RunShape& run, int rank);

// The busiest rank at each stage 0-3, indexed by stage number (run.stage
// ignored).
std::array<RankPrediction, kStageTable.size()> predict_stages(const model::ModelConfig& config, const RunShape& run);

// The lowest stage whose busiest rank's resident() fits in `max_bytes`
// (run.stage ignored), or none.
std::optional<Stage> smallest_fitting_stage(const model::ModelConfig& config, const RunShape& run, uint64_t max_bytes);

ProcessPrediction predict_process(const model::ModelConfig& config, const RunShape& run, LocalRanks local,
                                  uint64_t baseline);

// Throws ConfigError when the process's total() at run.stage exceeds
// `max_bytes`, one line: the prediction by category (its busiest rank), and
// which stage would fit (or what else to change), e.g.
//   [train] ZeRO stage 0 needs 49.9 GiB in this process (4 ranks, the
//   busiest 12.5 GiB: params 1.44, grads 1.44, optimizer 8.65, buffers 0.37,
//   activations 0.55, scratch 0.00 GiB; baseline 41.0 MiB), over --max-memory
//   23.4 GiB (this machine's memory): stage 3 would fit (14.9 GiB)
// `limit_source` says where the limit came from ("--max-memory",
// "this machine's memory").
void check_memory_fits(const model::ModelConfig& config, const RunShape& run, LocalRanks local, uint64_t baseline,
                       uint64_t max_bytes, const std::string& limit_source = "--max-memory");

}  // namespace zerodp::plan
