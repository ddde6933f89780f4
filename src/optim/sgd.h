// SPDX-License-Identifier: Apache-2.0
// SGD with momentum on a rank's flat fp32 shard, with PyTorch's semantics
// (torch.optim.SGD, dampening 0, maximize off). Per element, in float:
//   d = grad * grad_scale
//   d = d + wd*p                       (L2 weight decay, when wd != 0)
//   momentum > 0: b = d on the first step, else b = momentum*b + d;
//                 d = b, or with nesterov d = d + momentum*b
//   p = p + (-lr) * d
// Owns the momentum buffer (4 bytes per element) only when momentum > 0.
// "First step" is step_count() == 1 after the increment, so a loaded state
// with step_count() > 0 continues the running buffer.
// Thread-safety: as Optimizer.
#pragma once

#include "optim/optim_kernels.h"
#include "optim/optimizer.h"

namespace zerodp::optim {

class Sgd final : public Optimizer {
 public:
  // REQUIRES: validate()d config.
  Sgd(const SgdConfig& config, size_t shard_size, ShardOptions options = {});

  OptimizerKind kind() const override { return OptimizerKind::kSgd; }
  const SgdConfig& config() const { return config_; }

  // Empty when momentum is 0.
  std::span<float> momentum_buffer();

 private:
  void begin_step(double lr, float grad_scale) override;
  void update(float* params, const float* grads, size_t offset, size_t count, bool decay) override;

  SgdConfig config_;
  kernels::SgdScalars scalars_;
  kernels::MomentumMode mode_ = kernels::MomentumMode::kNone;
};

}  // namespace zerodp::optim
