// SPDX-License-Identifier: Apache-2.0
// The end-of-run summary: the ZeRO story told with this run's own numbers.
// Φ and one full replica's 2Φ + 2Φ + KΦ = 16Φ bytes; what each rank actually
// held (measured by its memory ledger) next to the paper's formula for this
// stage and N; the bytes each rank sent per step (measured by its
// communicator) next to 2Φ / 3Φ; peak activations and throughput.
// Thread-safety: pure formatting.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/quantize.h"
#include "comm/stats.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "zero/engine_config.h"
#include "zero/memory_ledger.h"

namespace zerodp::train {

struct RankMemory {
  std::array<uint64_t, zero::kNumMemoryCategories> current{};
  std::array<uint64_t, zero::kNumMemoryCategories> peak{};
  uint64_t model_states = 0;  // params + grads + master + moments, current
  uint64_t owned = 0;         // elements this rank owns in the partition plan
  uint64_t block_scales = 0;  // 8-bit Adam: both moments' fp32 block scales (beside K's whole bytes)
  uint64_t fp32_moments = 0;  // 8-bit Adam: what its fp32-moment units hold beyond K's bytes (6 per element)
  uint64_t tensor_stats = 0;  // Adafactor: the factored second moment's fp32 statistics (beside K's whole bytes)
  // --offload-optimizer: the rank's file on disk (master weights and
  // states), and what its passes read and wrote over the run so far, and
  // how long the rank waited for them (microseconds).
  uint64_t disk = 0;
  uint64_t disk_read = 0;
  uint64_t disk_written = 0;
  uint64_t disk_wait_us = 0;
  uint64_t disk_pass_us = 0;  // the passes' time, first request to last completion
  uint64_t disk_uring = 0;    // 1: the store's I/O runs on io_uring (0: worker threads)
  uint64_t disk_direct = 0;   // 1: its file is open with O_DIRECT
  // --offload-params: the rank's parameter file, what the gathers read and
  // the steps wrote (also in disk, disk_read and disk_written), and the
  // time each took (microseconds; the reads on the comm thread).
  uint64_t param_disk = 0;
  uint64_t param_read = 0;
  uint64_t param_written = 0;
  uint64_t param_read_us = 0;
  uint64_t param_write_us = 0;
  uint64_t get(zero::MemoryCategory c) const { return current[static_cast<size_t>(c)]; }
  uint64_t peak_of(zero::MemoryCategory c) const { return peak[static_cast<size_t>(c)]; }
};

struct RunStats {
  std::string model_description;
  uint64_t num_params = 0;
  uint64_t largest_unit = 0;
  // The engine's settings as the run had them: its stage, dtype, grad_accum
  // (micro-batches per step, each reduced on its own) and compressed
  // collectives (the bytes sent are packed).
  zero::EngineConfig engine;
  int ranks = 1;
  std::string backend;
  int optimizer_k = 12;                    // bytes of optimizer state per parameter (incl. fp32 master when mixed)
  std::vector<RankMemory> memory;          // per rank
  std::vector<comm::CommStats> step_comm;  // per rank, one (the last) step
  double tokens_per_second = 0.0;
  double seconds = 0.0;
  int64_t steps_taken = 0;  // optimizer steps, the measured one the last
  // Hybrid sharding: the ranks of a shard group (G; ranks in the flat layout),
  // and what of rank 0's step_comm crossed the groups (its replica
  // communicator's counters: the gradient shards' all-reduce); the rest
  // stayed inside its group.
  int shard_group = 0;
  comm::CommStats step_comm_across;
};

// The per-rank model-state bytes the paper's formula gives at this stage,
// with Φ/N replaced by the rank's exact owned count.
uint64_t formula_model_state_bytes(const RunStats& stats, int rank);
// What zerodp adds to the formula: stage 1 with grad_accum > 1 keeps an
// owned accumulator (pΦ/N) beside the flat local gradients it reduce-scatters
// from, because every micro-batch is reduced (docs/architecture.md).
uint64_t accumulator_bytes(const RunStats& stats, int rank);
// The elements rank 0 sends per step in units of Φ·(N-1)/N, as zerodp's
// schedule sends them (collectives_per_step of the stage table): the paper's
// 2Φ (stages 0-2) or 3Φ (stage 3) is one reduction per step; zerodp reduces
// each of the A micro-batches, so stage 0 sends 2AΦ, stages 1-2 AΦ + Φ (A
// reduce-scatters, one all-gather), stage 3 3AΦ (plus the tied embedding's
// extra gathers, not counted here).
double expected_sent_phi(const RunStats& stats);

std::string format_summary(const RunStats& stats);

}  // namespace zerodp::train
