// SPDX-License-Identifier: Apache-2.0
// The planner: from a typed PlanConfig (Φ or a GPT shape, N values,
// precision, optimizer, device memory, activation settings) to a PlanResult
// with, per N and per stage 0-3, the per-rank bytes by category, the
// communication per step, whether it fits, the recommended stage, the
// largest model that fits, and DeepSpeed's estimates beside ours.
//
// Per-rank peak at a stage = model states (memory_model.h) + unit buffers +
// activations (activations.h). With the model's shape, partitioned states
// are what the engine's busiest rank owns (per-unit shards), and the unit
// buffers are the ledger's "gathered" category: an fp32 compute copy of the
// largest unit in mixed precision (every stage), plus at stage 3 two gather
// buffers (current + prefetched unit) of the largest unit in the training
// dtype; and its "buckets": the transient gradients of the units whose
// backward is running (engine_memory.h, with the comm thread keeping pace).
// Stage 1 with grad_accum > 1 keeps a flat gradient staging buffer beside its
// owned accumulator (counted in grads, with or without the shape).
//
// Recommended stage: among the stages that fit, the least communication; of
// those equal in communication (stages 0, 1 and 2 all move 2Φ) the one with
// the least memory, since it costs nothing extra to keep and leaves the most
// room for activations. (With gradient accumulation, stage 2 reduce-scatters
// every micro-batch while stage 1 can wait for the boundary: not modelled.)
// Thread-safety: all functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "plan/activations.h"
#include "plan/memory_model.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

struct PlanConfig {
  uint64_t num_params = 0;        // Φ; taken from `shape` when that is set
  std::optional<GptShape> shape;  // from --model
  std::string model_name;         // for titles: a preset name or "custom"
  std::vector<int> ranks = {1};   // the N values to plan for
  Dtype precision = Dtype::bf16();
  optim::OptimizerConfig optimizer = {};        // only its kind and momentum matter (K)
  int grad_accum = 1;                           // micro-batches per step (stage 1's staging)
  std::optional<uint64_t> device_memory;        // bytes per rank
  std::optional<ActivationConfig> activations;  // needs `shape`
  // Compressed collectives (zerodp train --quantize-weights / --quantize-grads):
  // the communication volume counts their packed bytes where the stage has them.
  comm::Quantization quantize_weights = comm::Quantization::kNone;
  comm::Quantization quantize_grads = comm::Quantization::kNone;
  uint32_t quantize_block = comm::kDefaultQuantBlock;  // elements per scale, for both
  // Hybrid sharding (zerodp train --shard-group-size): the states are
  // partitioned over groups of this many ranks (each N must be a multiple);
  // 0 = each N (the flat layout). Stage 0 is planned flat.
  int shard_group = 0;
  // zerodp train --offload-optimizer: the master weights and optimizer
  // states on a local disk, streamed through staging buffers (needs `shape`).
  bool offload_optimizer = false;
  // zerodp train --offload-params: stage 3's parameter shards on a local
  // disk too (needs `shape` and bf16/fp16; stages 0-2 are planned without).
  bool offload_params = false;
  // zerodp train --compute bf16: the products' inputs kept as bf16, and
  // bf16 units read in place (no fp32 copy of a unit's matrices).
  bool bf16_compute = false;
};

struct StagePlan {
  Stage stage = Stage::k0;
  ModelStateBytes states;     // exact per-rank bytes
  double paper_bytes = 0;     // the paper's formula, Φ/N unrounded
  uint64_t gathered = 0;      // stage 3's two gather buffers, when the shape is known
  uint64_t compute_copy = 0;  // fp32 copy of the largest unit (mixed precision, shape known)
  uint64_t buckets = 0;       // transient unit gradients in backward (shape known)
  uint64_t comm_scratch = 0;  // the compressed collectives' scratch (shape known, quantized)
  uint64_t activations = 0;   // when estimated
  // Offload: the staging buffers in RAM (in buffers()), the file on disk and
  // a step's reads and writes of it (engine_memory.h).
  uint64_t offload = 0;
  uint64_t disk = 0;
  uint64_t disk_read = 0;
  uint64_t disk_written = 0;
  uint64_t peak = 0;  // states + gathered + compute_copy + buckets + comm scratch + offload + activations

  uint64_t buffers() const { return gathered + compute_copy + buckets + comm_scratch + offload; }
  CommVolume comm;
  std::optional<bool> fits;            // when device memory is given
  std::optional<uint64_t> max_params;  // largest Φ whose model states fit
};

struct DeepSpeedComparison {
  uint64_t zero2_bytes = 0;
  std::optional<uint64_t> zero3_bytes;  // needs the largest layer (--model)
};

struct RankPlan {
  int ranks = 1;
  int shard_group = 1;  // the ranks the states are partitioned over (stages 1-3): ranks, or the hybrid group
  std::array<StagePlan, kStageTable.size()> stages;  // indexed by stage number
  std::optional<Stage> recommended;                  // when device memory is given and a stage fits
  std::string recommendation;                        // one sentence why (or why none)
  DeepSpeedComparison deepspeed;
};

struct PlanResult {
  PlanConfig config;  // with num_params resolved
  BytesPerParam bytes_per_param;
  std::optional<ActivationEstimate> activations;
  std::optional<uint64_t> largest_unit_params;
  std::optional<uint64_t> largest_module_params;
  // One checkpoint on disk (plan/checkpoint_size.h), saved at the largest N
  // (its shard group with hybrid sharding): what `zerodp train --save`
  // needs room for twice.
  uint64_t checkpoint_bytes = 0;
  std::vector<RankPlan> per_ranks;
};

// ConfigError on an empty/invalid rank list, Φ == 0, or activations
// without a shape.
PlanResult make_plan(const PlanConfig& config);

// "1,4,16,64" or "64" -> {1, 4, 16, 64}; ConfigError naming the bad item.
std::vector<int> parse_rank_list(std::string_view text);

}  // namespace zerodp::plan
