// SPDX-License-Identifier: Apache-2.0
#include "optim/lion.h"

#include <cstring>
#include <vector>

#include "core/counter_hash.h"

namespace zerodp::optim {

Lion::Lion(const LionConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)), config_(config) {
  add_state(config.bf16_momentum ? StateKind::kExpAvgBf16 : StateKind::kExpAvg);
}

float Lion::exp_avg_bf16(size_t i) const {
  const std::vector<ConstStateTensor> s = state();
  BFloat16 m;
  std::memcpy(&m.bits, s[0].codes.data() + 2 * i, sizeof m.bits);
  return bfloat16_to_float(m);
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
  step_key_ = mix64(static_cast<uint64_t>(step_count()) * kGoldenGamma + 1);
}

void Lion::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  // As AdamW: no decay multiply when weight_decay is 0 (or in a no-decay range).
  const bool decays = decay && config_.weight_decay != 0.0;
  if (config_.bf16_momentum) return update_bf16(params, grads, offset, count, decays);
  kernels::kernel_set(simd()).lion(params, grads, state_data(0) + offset, count, scalars_, decays);
}

// lion_loop's operations with m read from bf16 and the new m rounded to it.
void Lion::update_bf16(float* params, const float* grads, size_t offset, size_t count, bool decays) {
  const kernels::LionScalars& s = scalars_;
  uint8_t* m_bytes = state_codes(0) + 2 * offset;
  const bool stochastic = config_.momentum_rounding == RoundingMode::kStochastic;
  const uint64_t first = flat_offset() + offset;  // the model's flat index of element 0 here
  for (size_t i = 0; i < count; ++i) {
    BFloat16 mb;
    std::memcpy(&mb.bits, m_bytes + 2 * i, sizeof mb.bits);
    const float m = bfloat16_to_float(mb);
    const float grad = grads[i] * s.grad_scale;
    float param = params[i];
    if (decays) param = param * s.decay_factor;
    const float c = m * s.beta1 + s.one_minus_beta1 * grad;
    const float sign = (static_cast<float>(c > 0.0f) - static_cast<float>(c < 0.0f)) + (c - c);
    params[i] = param + s.neg_lr * sign;
    const float m_new = m * s.beta2 + s.one_minus_beta2 * grad;
    const BFloat16 next = stochastic
                              ? float_to_bfloat16_stochastic(
                                    m_new, static_cast<uint16_t>(mix64(step_key_ + (first + i) * kGoldenGamma) >> 48))
                              : float_to_bfloat16(m_new);
    std::memcpy(m_bytes + 2 * i, &next.bits, sizeof next.bits);
  }
}

}  // namespace zerodp::optim
