// SPDX-License-Identifier: Apache-2.0
// Adam and AdamW on a rank's flat fp32 shard, with PyTorch's formulas
// (torch.optim.Adam / AdamW, amsgrad and maximize off). At step t, per
// element, in float, in this order:
//   g = grad * grad_scale
//   Adam only:  g = g + wd*p                      (L2 into the gradient)
//   AdamW only: p = p * (1 - lr*wd)               (decoupled decay)
//   m = b1*m + (1-b1)*g
//   v = b2*v + ((1-b2)*g)*g
//   p = p + (-lr/(1-b1^t)) * (m / (sqrt(v)/sqrt(1-b2^t) + eps))
// The scalars 1-lr*wd, 1-b1, 1-b2, sqrt(1-b2^t) and -lr/(1-b1^t) are computed
// in double and rounded to float once per step. Elements in a no-decay range
// skip the decay line. Owns m and v (8 bytes per element).
// Thread-safety: as Optimizer.
#pragma once

#include "optim/optim_kernels.h"
#include "optim/optimizer.h"

namespace zerodp::optim {

enum class AdamVariant : uint8_t { kAdamW = 0, kAdam = 1 };

// Step t's float scalars (t >= 1), computed in double and rounded once:
// what Adam, AdamW and 8-bit Adam put into the element loop.
kernels::AdamScalars adam_scalars(const AdamConfig& config, int64_t t, double lr, float grad_scale);

class Adam final : public Optimizer {
 public:
  // REQUIRES: validate()d config. Allocates zeroed m and v of shard_size.
  Adam(const AdamConfig& config, AdamVariant variant, size_t shard_size, ShardOptions options = {});

  OptimizerKind kind() const override;
  const AdamConfig& config() const { return config_; }

  std::span<float> exp_avg() { return {state_data(0), size()}; }
  std::span<float> exp_avg_sq() { return {state_data(1), size()}; }

 private:
  void begin_step(double lr, float grad_scale) override;
  void update(float* params, const float* grads, size_t offset, size_t count, bool decay) override;

  AdamConfig config_;
  AdamVariant variant_;
  kernels::AdamScalars scalars_;
};

}  // namespace zerodp::optim
