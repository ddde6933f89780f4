// SPDX-License-Identifier: Apache-2.0
// The bytes one checkpoint of a run takes on disk (docs/checkpoint-format.md,
// src/ckpt/format.h), predicted from the model and the optimizer before
// anything is allocated: what `zerodp plan` prints and what `zerodp train
// --save` checks the free space against (train/output_preflight.h).
//
// A checkpoint stores every state element once, whatever the stage: the
// fp32 master weights (4 bytes per parameter, fp32 training included: its
// parameters are the master copy) and the optimizer's state tensors, split
// over the shard files of the `ranks` ranks the states are partitioned over.
// Its payload, per parameter: 4 for the master, and per moment of
// optim::optimizer_bytes_per_param 1 for 8-bit codes, else 4 (every other
// state is stored as fp32, Lion's bf16 momentum too); plus 8-bit Adam's
// block scales and fp32 units (moment_extra_bytes summed over the ranks'
// shards: a block two shards touch counts twice, an upper bound by one
// scale per unit and rank) and Adafactor's statistics in the packed form
// checkpoints store, one fp32 per element (optim/adafactor.h). The format's
// own bytes and the filesystem's rounding are bounded from above: per
// shard file kShardFileBytes, per record (unit x tensor) a header and its
// chunk CRCs (4 bytes per 64 KiB), and the manifest and `latest`.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "model/presets.h"
#include "optim/optimizer_config.h"
#include "plan/engine_memory.h"

namespace zerodp::plan {

// Bounds on what is not state: a shard file's header and its last
// filesystem block; the manifest (JSON: the run's settings, a few KB, and a
// line per unit), `latest` and the folder.
inline constexpr uint64_t kShardFileBytes = 64 << 10;
inline constexpr uint64_t kManifestBytes = 64 << 10;
inline constexpr uint64_t kManifestBytesPerUnit = 512;

// One checkpoint of `schedule`'s model with `optimizer`, saved by `ranks`
// ranks (the shard group's G with hybrid sharding). ConfigError unless
// ranks >= 1.
uint64_t checkpoint_bytes(const UnitSchedule& schedule, const optim::OptimizerConfig& optimizer, int ranks);
// The same for a model config (plan::unit_schedule(config)).
uint64_t checkpoint_bytes(const model::ModelConfig& config, const optim::OptimizerConfig& optimizer, int ranks);

}  // namespace zerodp::plan
