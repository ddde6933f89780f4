// SPDX-License-Identifier: Apache-2.0
// Reading a DeepSpeed-style JSON config into a TrainConfig.
//
// Keys with a meaning here: train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, steps_per_print, gradient_clipping,
// zero_optimization {stage, reduce_bucket_size, overlap_comm,
// stage3_prefetch_bucket_size}, fp16 {enabled, loss_scale,
// initial_scale_power, loss_scale_window, hysteresis, min_loss_scale,
// consecutive_hysteresis}, bf16 {enabled}, optimizer {type: Adam | AdamW |
// SGD | Lion, params {lr, betas, eps, weight_decay, momentum, nesterov,
// adam_w_mode}}, scheduler {type: WarmupLR | WarmupDecayLR | WarmupCosineLR,
// params}, activation_checkpointing (its presence turns it on), and Hugging
// Face Trainer's "auto" where zerodp can fill it (ds_config_section.h).
// DeepSpeed keys that do nothing here (offload, monitors, ...) are warned
// about by name; any other key is a ConfigError naming it. See
// docs/train.md for the mapping.
// Thread-safety: pure functions (warnings go to the given sink).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "train/train_config.h"

namespace zerodp::train {

using WarningSink = std::function<void(const std::string&)>;

// DeepSpeed's defaults where zerodp's differ, applied first whenever a config
// file is given (docs/train.md lists them and where zerodp still differs):
// stage 0, fp32, no clipping, AdamW at lr 1e-3 (betas 0.9/0.999, eps 1e-8,
// no weight decay; a Lion gets the same lr and betas, as DeepSpeed's Lion
// does), a constant rate, a log line every 10 steps.
void apply_deepspeed_defaults(TrainConfig& config);

// Applies DeepSpeed's defaults and then the JSON text to `config`; `source`
// names it in messages. Records in config.sources where each setting came from.
void apply_deepspeed_config(std::string_view json_text, std::string_view source, TrainConfig& config,
                            const WarningSink& warn);
// Reads and applies a file; warnings go to stderr.
void apply_deepspeed_config_file(const std::string& path, TrainConfig& config);

}  // namespace zerodp::train
