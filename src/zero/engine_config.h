// SPDX-License-Identifier: Apache-2.0
// EngineConfig: everything the ZeRO engine needs to know about one run, as
// typed values (the CLI and the DeepSpeed-config reader fill it once).
// Thread-safety: a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "kernels/compute.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"

namespace zerodp::zero {

struct EngineConfig {
  Stage stage = Stage::k0;      // what is partitioned and how it moves: traits(stage)
  Dtype dtype = Dtype::fp32();  // storage and communication dtype of params and grads
  // The model's matrix products (kernels/compute.h): fp32, or bf16 operands
  // with fp32 sums; with any dtype (bf16 compute of fp32 weights is autocast).
  kernels::Compute compute = kernels::Compute::kFp32;
  int grad_accum = 1;                 // micro-batches per optimizer step
  double clip_norm = 0.0;             // global gradient-norm clipping; 0 = off
  size_t bucket_elements = 25 << 20;  // stage 0: all-reduce units together up to this many elements
  bool prefetch = true;               // stage 3: gather the next unit while this one computes
  bool overlap = true;                // run collectives on the rank's comm thread
  // Compressed collectives (ZeRO++ qwZ / qgZ, comm/quantize.h): what only
  // crosses the link; master weights and the optimizer stay fp32 and exact.
  // quantize_weights: stage 3's parameter all-gathers in forward and
  // backward (int8). quantize_grads: the gradient reduce-scatter of stages
  // 1-3 (int8 or int4). kNone: the plain collectives. quantize_block:
  // elements per scale, for both (comm::quant_block_offered).
  // quantize_rounding: how values round to codes, for both (nearest, or
  // stochastic keyed by step, unit and micro-batch: Engine::rounding_key).
  // quantize_delay: optimizer steps taken before either quantizes (the
  // plain collectives until then; TensorFlow's quant_delay), for a model
  // whose early training is sensitive to the codes' error (docs/scale.md).
  comm::Quantization quantize_weights = comm::Quantization::kNone;
  comm::Quantization quantize_grads = comm::Quantization::kNone;
  uint32_t quantize_block = comm::kDefaultQuantBlock;
  RoundingMode quantize_rounding = RoundingMode::kNearest;
  int64_t quantize_delay = 0;
  // Hybrid sharding (HSDP / MiCS / ZeRO++ hpZ): the N ranks form N/G groups
  // of G consecutive ranks; the model states are partitioned inside a group
  // as a flat run of G ranks partitions them and replicated across groups.
  // 0 = N (the flat layout). Stages 1-3; must divide N.
  int shard_group_size = 0;
  // --offload-optimizer: the directory whose disk holds each rank's fp32
  // master weights and optimizer states (zero/offload_store.h), streamed
  // through RAM for each optimizer step; empty: they stay in RAM.
  std::string offload_optimizer_dir;
  // --offload-params: the directory whose disk holds each rank's stage-3
  // parameter shards (zero/param_store.h), read for each gather and written
  // after each step; empty: they stay in RAM. Stage 3, bf16/fp16 (at fp32
  // the parameters are the master weights: --offload-optimizer moves those).
  std::string offload_params_dir;
  optim::OptimizerConfig optimizer = {};
  // The run's one learning rate: lr_schedule.max_lr is its peak, and each
  // optimizer step takes lr_schedule.lr_at(step).
  optim::LrScheduleConfig lr_schedule = {};
  optim::LossScalerConfig loss_scaler = {};  // used for fp16 only
};

// With overlap, how many gradient reductions (each holding its input buffer)
// may wait for the comm thread before the compute thread waits for the
// oldest: two keep it busy (one running, one ready) and bound the memory
// (plan/engine_memory.cc counts the same).
inline constexpr size_t kMaxReductionsInFlight = 2;

// The shard group size G of a run of `ranks` ranks (config 0 means all of
// them). ConfigError naming --shard-group-size when G does not divide the
// ranks or is set (below the ranks) at stage 0.
int shard_group_size(const EngineConfig& config, int ranks);

// The compressed collectives' wire formats (kNone codes: the plain
// collective), once quantize_delay steps are taken (Engine::format_now).
inline comm::QuantFormat weights_format(const EngineConfig& c) {
  return {.codes = c.quantize_weights, .block = c.quantize_block, .rounding = c.quantize_rounding};
}
inline comm::QuantFormat grads_format(const EngineConfig& c) {
  return {.codes = c.quantize_grads, .block = c.quantize_block, .rounding = c.quantize_rounding};
}

// Throws ConfigError for grad_accum < 1, shard_group_size < 0, clip < 0, bad optimizer or
// loss-scaler values, Adafactor without relative steps and without a rate
// (lr_schedule.max_lr 0), quantize_weights below stage 3 (or other than int8)
// quantize_grads at stage 0 (its all-reduce is not quantized) and a
// quantize_block not offered.
void validate(const EngineConfig& config);

}  // namespace zerodp::zero
