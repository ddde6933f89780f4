// Reading a DeepSpeed-style JSON config into a TrainConfig.
//
// Keys with a meaning here: train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, steps_per_print, gradient_clipping,
// zero_optimization {stage, reduce_bucket_size, overlap_comm,
// stage3_prefetch_bucket_size}, fp16 {enabled, loss_scale,
// initial_scale_power, loss_scale_window, hysteresis, min_loss_scale,
// consecutive_hysteresis}, bf16 {enabled}, optimizer {type: Adam | AdamW |
// SGD, params {lr, betas, eps, weight_decay, momentum, nesterov,
// adam_w_mode}}, scheduler {type: WarmupLR | WarmupDecayLR | WarmupCosineLR,
// params}. DeepSpeed keys that do nothing here (offload, monitors, ...) are
// warned about by name; any other key is a ConfigError naming it. See
// docs/train.md for the mapping.
// Thread-safety: pure functions (warnings go to the given sink).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "train/train_config.h"

namespace zerodp::train {

using WarningSink = std::function<void(const std::string&)>;

// Applies the JSON text to `config`; `source` names it in messages.
void apply_deepspeed_config(std::string_view json_text, std::string_view source, TrainConfig& config,
                            const WarningSink& warn);
// Reads and applies a file; warnings go to stderr.
void apply_deepspeed_config_file(const std::string& path, TrainConfig& config);

}  // namespace zerodp::train
