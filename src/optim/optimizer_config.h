// SPDX-License-Identifier: Apache-2.0
// The optimizer configs as plain values: which optimizer, its
// hyperparameters (DeepSpeed's names, docs/optim.md), their names and
// validation. A header of its own so that code recording a config (a
// checkpoint manifest) needs nothing of the optimizer itself. The learning
// rate is not among them: a run has one, its schedule's (optim/lr_schedule.h),
// and Optimizer::step takes each step's rate as an argument.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/rounding.h"

namespace zerodp::optim {

enum class OptimizerKind : uint8_t { kAdamW = 0, kAdam = 1, kSgd = 2, kLion = 3, kAdam8bit = 4, kAdafactor = 5 };

// "adamw", "adam", "sgd", "lion", "adam8bit" or "adafactor"; ConfigError naming the
// accepted values otherwise.
OptimizerKind parse_optimizer_kind(std::string_view name);
std::string_view optimizer_kind_name(OptimizerKind kind);

// Adam and AdamW (PyTorch torch.optim.Adam / AdamW, amsgrad off).
// AdamW decays decoupled: p = p*(1 - lr*wd) before the update.
// Adam adds L2 to the gradient: g = g + wd*p.
// 8-bit Adam (kAdam8bit, optim/adam8bit.h) takes the same values: AdamW's
// update with both moments stored block-wise quantized to 8 bits.
struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // 8-bit Adam only (the others ignore them), bitsandbytes' advice: a unit
  // holding the token embedding (fp32_embedding), and a unit of fewer than
  // min_8bit_size elements, keep AdamW's fp32 moments (unit_optimizer_config).
  bool fp32_embedding = true;
  uint64_t min_8bit_size = 4096;  // bitsandbytes' name and default; 0: no unit is too small
};

// SGD with momentum (PyTorch torch.optim.SGD, dampening 0): L2 weight decay
// into the gradient; momentum buffer b = g on the first step, then
// b = momentum*b + g; update d = b, or g + momentum*b with nesterov.
struct SgdConfig {
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
// arXiv 2302.06675, Algorithm 2; DeepSpeed's "Lion"): one momentum m and a
// sign update, with decoupled weight decay applied as p*(1 - lr*wd):
//   c = b1*m + (1-b1)*g;  p = p*(1 - lr*wd) - lr*sign(c);  m = b2*m + (1-b2)*g
// The defaults are the paper's (and lion-pytorch's); Lion wants a learning
// rate 3-10x smaller than AdamW's and a weight decay 3-10x larger.
// bf16_momentum keeps m in bf16 (2 bytes, K = 6 with an fp32 master): each
// step reads m widened exactly to fp32, computes c and the new m in fp32 as
// above, and stores the new m rounded to bf16 by momentum_rounding: to the
// nearest, ties to even (core/dtype.h float_to_bfloat16), or stochastically
// (float_to_bfloat16_stochastic, unbiased: an EMA step smaller than half a
// bf16 ulp still moves m on average), with random bits drawn from the
// element's flat index and the step (optim/lion.h). NaN stays NaN.
// RoundingMode: core/rounding.h.
using zerodp::parse_rounding_mode;
using zerodp::rounding_mode_name;
using zerodp::RoundingMode;
struct LionConfig {
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;
  bool bf16_momentum = false;
  RoundingMode momentum_rounding = RoundingMode::kNearest;  // with bf16_momentum
};

// Adafactor (Shazeer & Stern 2018; optim/adafactor.h) with Hugging Face
// transformers' names and defaults: no first moment (beta1 None there, 0
// here), relative step sizes 1/sqrt(t) capped at 1e-2 scaled by the
// parameter's RMS, update clipping at RMS 1, b2t = 1 - t^-0.8. With
// relative_step off the step's lr (the schedule's) is the base rate; with it
// on the lr passed to step() is not read. DeepSpeed has no Adafactor.
struct AdafactorConfig {
  double beta1 = 0.0;           // > 0: a first moment m (4 bytes per parameter)
  double eps1 = 1e-30;          // eps[0]: added to g^2
  double eps2 = 1e-3;           // eps[1]: the least parameter scale
  double clip_threshold = 1.0;  // the largest RMS of an update
  double decay_rate = -0.8;     // b2t = 1 - t^decay_rate
  double weight_decay = 0.0;
  bool scale_parameter = true;  // lr_t scaled by max(eps2, RMS(p))
  bool relative_step = true;    // rho = min(1e-2, 1/sqrt(t)) instead of lr
  bool warmup_init = false;     // rho = min(1e-6 * t, 1/sqrt(t)) (needs relative_step)
};

// Which optimizer, with the config of that kind (the others are ignored).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  AdamConfig adam = {};  // AdamW, Adam and 8-bit Adam
  SgdConfig sgd = {};
  LionConfig lion = {};
  AdafactorConfig adafactor = {};
};

// The config of one unit's optimizer: `config`, except for 8-bit Adam's
// units that keep fp32 moments (AdamConfig::fp32_embedding with a unit that
// holds the token embedding, or a unit of fewer than min_8bit_size
// elements), which get AdamW with the same hyperparameters: 8-bit Adam's
// float operations with the moments stored as floats (docs/optim.md). A
// unit's choice depends only on the model, so it is the same at every stage
// and rank count.
OptimizerConfig unit_optimizer_config(const OptimizerConfig& config, uint64_t unit_count, bool holds_token_embedding);
// Whether unit_optimizer_config keeps that unit's moments in fp32 for 8-bit Adam.
bool keeps_fp32_moments(const OptimizerConfig& config, uint64_t unit_count, bool holds_token_embedding);

// The weight decay of config.kind's config.
double config_weight_decay(const OptimizerConfig& config);

// Throws ConfigError for out-of-range hyperparameters (betas
// outside [0, 1), negative eps or weight decay, nesterov without momentum).
void validate(const OptimizerConfig& config);

}  // namespace zerodp::optim
