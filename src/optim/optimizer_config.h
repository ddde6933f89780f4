// SPDX-License-Identifier: Apache-2.0
// The optimizer configs as plain values: which optimizer, its
// hyperparameters (DeepSpeed's names, docs/optim.md), their names and
// validation. A header of its own so that code recording a config (a
// checkpoint manifest) needs nothing of the optimizer itself.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace zerodp::optim {

enum class OptimizerKind : uint8_t { kAdamW = 0, kAdam = 1, kSgd = 2, kLion = 3, kAdam8bit = 4 };

// "adamw", "adam", "sgd", "lion" or "adam8bit"; ConfigError naming the
// accepted values otherwise.
OptimizerKind parse_optimizer_kind(std::string_view name);
std::string_view optimizer_kind_name(OptimizerKind kind);

// Adam and AdamW (PyTorch torch.optim.Adam / AdamW, amsgrad off).
// AdamW decays decoupled: p = p*(1 - lr*wd) before the update.
// Adam adds L2 to the gradient: g = g + wd*p.
// 8-bit Adam (kAdam8bit, optim/adam8bit.h) takes the same values: AdamW's
// update with both moments stored block-wise quantized to 8 bits.
struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// SGD with momentum (PyTorch torch.optim.SGD, dampening 0): L2 weight decay
// into the gradient; momentum buffer b = g on the first step, then
// b = momentum*b + g; update d = b, or g + momentum*b with nesterov.
struct SgdConfig {
  double lr = 1e-2;
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
struct LionConfig {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;
};

// Which optimizer, with the config of that kind (the others are ignored).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  AdamConfig adam = {};  // AdamW, Adam and 8-bit Adam
  SgdConfig sgd = {};
  LionConfig lion = {};
};

// The learning rate and the weight decay of config.kind's config.
double config_lr(const OptimizerConfig& config);
double config_weight_decay(const OptimizerConfig& config);

// Throws ConfigError for out-of-range hyperparameters (negative lr, betas
// outside [0, 1), negative eps or weight decay, nesterov without momentum).
void validate(const OptimizerConfig& config);

}  // namespace zerodp::optim
