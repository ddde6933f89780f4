// SPDX-License-Identifier: Apache-2.0
// The refusals of a run's engine values (accumulation, clipping, optimizer,
// schedule, loss scaler) in the user's words: each names the
// `zerodp train` flag and the --config key that set the value, e.g.
//   [train] --lr -1 (optimizer.params.lr in --config) must be a finite number >= 0, e.g. 1.5e-3
// instead of the module that would refuse it later ("[adamw] lr -1 ...").
// The engine's and the optimizer's own checks stay, for callers that are
// not the CLI. The stage is typed (core/stage.h): --stage and
// zero_optimization.stage are refused where they are read (parse_stage),
// with the same message.
// Thread-safety: a pure function.
#pragma once

#include "train/train_config.h"

namespace zerodp::train {

// Throws ConfigError (one line) for the first value that cannot work.
void check_engine_values(const TrainConfig& config);

// Hybrid sharding once the ranks are known: --shard-group-size (or
// mics_shard_size / zero_hpz_partition_size) must divide them, and below
// them needs stage 1-3. ConfigError naming the flag or key and the fix.
void check_shard_group(const TrainConfig& config, int ranks);
// Pipeline stages once the ranks are known: P must divide them, the cut
// must have P stages, and what a pipelined run does not do yet (ZeRO
// stages 2-3, offload, hybrid sharding) is refused, each
// naming the flag and the fix.
void check_pipeline(const TrainConfig& config, int ranks);

}  // namespace zerodp::train
