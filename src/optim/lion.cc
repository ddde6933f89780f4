// SPDX-License-Identifier: Apache-2.0
#include "optim/lion.h"

namespace zerodp::optim {

Lion::Lion(const LionConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)), config_(config) {
  add_state(StateKind::kExpAvg);
}

void Lion::begin_step(double lr, float grad_scale) {
  kernels::LionScalars& s = scalars_;
  s.grad_scale = grad_scale;
  s.decay_factor = static_cast<float>(1.0 - lr * config_.weight_decay);
  s.beta1 = static_cast<float>(config_.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - config_.beta1);
  s.beta2 = static_cast<float>(config_.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - config_.beta2);
  s.neg_lr = static_cast<float>(-lr);
}

void Lion::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  // As AdamW: no decay multiply when weight_decay is 0 (or in a no-decay range).
  const bool decays = decay && config_.weight_decay != 0.0;
  kernels::kernel_set(simd()).lion(params, grads, state_data(0) + offset, count, scalars_, decays);
}

}  // namespace zerodp::optim
