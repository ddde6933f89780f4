// SPDX-License-Identifier: Apache-2.0
#include "optim/adam.h"

#include <cmath>

namespace zerodp::optim {

Adam::Adam(const AdamConfig& config, AdamVariant variant, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)), config_(config), variant_(variant) {
  add_state(StateKind::kExpAvg);
  add_state(StateKind::kExpAvgSq);
}

OptimizerKind Adam::kind() const {
  return variant_ == AdamVariant::kAdamW ? OptimizerKind::kAdamW : OptimizerKind::kAdam;
}

kernels::AdamScalars adam_scalars(const AdamConfig& config, int64_t step, double lr, float grad_scale) {
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(config.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(config.beta2, t);
  kernels::AdamScalars s;
  s.grad_scale = grad_scale;
  s.l2 = static_cast<float>(config.weight_decay);
  s.decay_factor = static_cast<float>(1.0 - lr * config.weight_decay);
  s.beta1 = static_cast<float>(config.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - config.beta1);
  s.beta2 = static_cast<float>(config.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - config.beta2);
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(config.eps);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  return s;
}

void Adam::begin_step(double lr, float grad_scale) { scalars_ = adam_scalars(config_, step_count(), lr, grad_scale); }

void Adam::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  kernels::DecayMode mode = kernels::DecayMode::kNone;
  // PyTorch skips the decay entirely when weight_decay is 0 (no 0*p term,
  // which would turn an infinite p into NaN).
  if (decay && config_.weight_decay != 0.0) {
    mode = variant_ == AdamVariant::kAdamW ? kernels::DecayMode::kDecoupled : kernels::DecayMode::kL2;
  }
  float* m = state_data(0) + offset;
  float* v = state_data(1) + offset;
  kernels::kernel_set(simd()).adam(params, grads, m, v, count, scalars_, mode);
}

}  // namespace zerodp::optim
