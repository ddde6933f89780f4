// SPDX-License-Identifier: Apache-2.0
// Lion on a rank's flat fp32 shard (Chen et al. 2023, "Symbolic Discovery of
// Optimization Algorithms", arXiv 2302.06675, Algorithm 2). At each step, per
// element, in float, in this order:
//   g = grad * grad_scale
//   p = p * (1 - lr*wd)                       (decoupled decay, when wd != 0)
//   c = b1*m + (1-b1)*g
//   p = p + (-lr) * sign(c)                   sign(+-0) = 0; NaN for a non-finite c
//   m = b2*m + (1-b2)*g
// The paper writes the update as p - lr*(sign(c) + wd*p); the decay is applied
// as the multiply p*(1 - lr*wd), as the paper's code, lion-pytorch and
// DeepSpeed's Lion do (lr is the step's scheduled rate). The scalars
// 1 - lr*wd, 1-b1, 1-b2 and -lr are computed in double and rounded to float
// once per step; -lr*sign(c) is then exact. There is no bias correction and
// no step-count dependence. Elements in a no-decay range skip the decay line.
// Owns m ("exp_avg", the name lion-pytorch and DeepSpeed give it), 4 bytes
// per element, allocated zeroed; with LionConfig::bf16_momentum, m is kept
// as bf16 ("exp_avg_bf16", 2 bytes per element): read widened exactly, the
// new m computed in float as above and stored rounded to nearest, ties to
// even, or stochastically (LionConfig::momentum_rounding). Stochastic
// rounding's 16 random bits for flat element i at step t are the top bits of
// mix64(mix64(t * gamma + 1) + i * gamma) (core/counter_hash.h): they depend
// on the element and the step only, so every N, stage and resume draws the
// same ones. That loop is scalar at every SIMD level (one form, so the same
// bits).
// Non-finite gradients: a NaN or infinite g makes m and the parameter NaN, as
// AdamW's update does. The engine never gets there: fp16 skips overflow steps
// and fp32/bf16 stop with an error before the optimizer runs.
// Thread-safety: as Optimizer.
#pragma once

#include "optim/optim_kernels.h"
#include "optim/optimizer.h"

namespace zerodp::optim {

class Lion final : public Optimizer {
 public:
  // REQUIRES: validate()d config. Allocates a zeroed m of shard_size.
  Lion(const LionConfig& config, size_t shard_size, ShardOptions options = {});

  OptimizerKind kind() const override { return OptimizerKind::kLion; }
  const LionConfig& config() const { return config_; }

  // fp32 momentum only.
  std::span<float> exp_avg() { return {state_data(0), size()}; }
  // bf16 momentum only: m[i] widened.
  float exp_avg_bf16(size_t i) const;

 private:
  void begin_step(double lr, float grad_scale) override;
  void update(float* params, const float* grads, size_t offset, size_t count, bool decay) override;
  void update_bf16(float* params, const float* grads, size_t offset, size_t count, bool decays);

  LionConfig config_;
  kernels::LionScalars scalars_;
  uint64_t step_key_ = 0;  // stochastic rounding: this step's stream
};

}  // namespace zerodp::optim
