// SPDX-License-Identifier: Apache-2.0
#include "optim/sgd.h"

namespace zerodp::optim {

Sgd::Sgd(const SgdConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)), config_(config) {
  if (config_.momentum > 0.0) add_state(StateKind::kMomentum);
}

std::span<float> Sgd::momentum_buffer() {
  if (config_.momentum <= 0.0) return {};
  return {state_data(0), size()};
}

void Sgd::begin_step(double lr, float grad_scale) {
  scalars_.grad_scale = grad_scale;
  scalars_.l2 = static_cast<float>(config_.weight_decay);
  scalars_.momentum = static_cast<float>(config_.momentum);
  scalars_.neg_lr = static_cast<float>(-lr);
  if (config_.momentum <= 0.0) {
    mode_ = kernels::MomentumMode::kNone;
  } else {
    mode_ = step_count() == 1 ? kernels::MomentumMode::kFirst : kernels::MomentumMode::kRunning;
  }
}

void Sgd::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  const kernels::DecayMode d =
      decay && config_.weight_decay != 0.0 ? kernels::DecayMode::kL2 : kernels::DecayMode::kNone;
  float* buf = mode_ == kernels::MomentumMode::kNone ? nullptr : state_data(0) + offset;
  kernels::kernel_set(simd()).sgd(params, grads, buf, count, scalars_, d, mode_, config_.nesterov);
}

}  // namespace zerodp::optim
