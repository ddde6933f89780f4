// SPDX-License-Identifier: Apache-2.0
#include "optim/adam8bit.h"

#include <algorithm>
#include <cmath>

#include "optim/adam.h"

namespace zerodp::optim {
namespace {

// The new moments of one element from its codes and its block's old scales;
// false (and m = v = 0) when g or the new v is not finite.
struct Moments {
  float m, v;
  bool finite;
};
inline Moments new_moments(float grad, uint8_t qm, uint8_t qv, float old_m, float old_v,
                           const kernels::AdamScalars& s) {
  const float g = grad * s.grad_scale;
  const float m = quant8::signed_map().code[qm] * old_m;
  const float v = quant8::unsigned_map().code[qv] * old_v;
  const float m_new = m * s.beta1 + s.one_minus_beta1 * g;
  const float v_new = v * s.beta2 + (s.one_minus_beta2 * g) * g;
  if (!std::isfinite(v_new)) return {0.0f, 0.0f, false};
  return {m_new, v_new, true};
}

inline uint8_t quantize_by(const quant8::DynamicMap& map, float value, float absmax) {
  return absmax > 0.0f ? quant8::quantize(map, value / absmax) : map.zero;
}

}  // namespace

Adam8bit::Adam8bit(const AdamConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)),
      config_(config),
      blocks_(quant8::blocks_touched(unit_offset(), shard_size)) {
  add_state(StateKind::kExpAvgCodes);
  add_state(StateKind::kExpAvgSqCodes);
  add_state(StateKind::kExpAvgAbsmax, blocks_.count);
  add_state(StateKind::kExpAvgSqAbsmax, blocks_.count);
  // Zeroed codes are not m = 0: the code of 0 is index 127 of the signed map
  // (0 of the unsigned one). With zero scales every code dequantizes to 0
  // anyway, but the codes are state a checkpoint keeps, so start from 0's.
  std::fill_n(state_codes(0), shard_size, quant8::signed_map().zero);
  std::fill_n(state_codes(1), shard_size, quant8::unsigned_map().zero);
}

void Adam8bit::share_block_end_maxima(const BlockEndMaxima& combined) { shared_ = combined; }

void Adam8bit::begin_step(double lr, float grad_scale) {
  scalars_ = adam_scalars(config_, step_count(), lr, grad_scale);
}

std::array<float, 2> Adam8bit::partial_block_maxima(const float* grads, size_t begin, size_t count, float grad_scale) {
  // The moments need only the betas and the grad scale (no step count, no lr).
  const kernels::AdamScalars s = adam_scalars(config_, 1, 0.0, grad_scale);
  const size_t block = (unit_offset() + begin) / quant8::kBlockSize - blocks_.first;
  const float old_m = state_data(2)[block], old_v = state_data(3)[block];
  const uint8_t* qm = state_codes(0) + begin;
  const uint8_t* qv = state_codes(1) + begin;
  float max_m = 0.0f, max_v = 0.0f;
  for (size_t i = 0; i < count; ++i) {
    const Moments n = new_moments(grads[i], qm[i], qv[i], old_m, old_v, s);
    max_m = std::max(max_m, std::fabs(n.m));
    max_v = std::max(max_v, n.v);
  }
  return {max_m, max_v};
}

// Block by block: the block's new scales (the shared ones for a shard's end
// blocks when given, else a first pass over the block), then the update.
void Adam8bit::apply(float* params, const float* grads, size_t begin, size_t count) {
  const size_t end = begin + count;
  for (size_t at = begin; at < end;) {
    const size_t unit_at = unit_offset() + at;
    const size_t block = unit_at / quant8::kBlockSize - blocks_.first;
    const size_t n = std::min(end - at, (unit_at / quant8::kBlockSize + 1) * quant8::kBlockSize - unit_at);
    const float* g = grads + (at - begin);
    std::array<float, 2> fresh{};
    if (shared_ && block == 0) {
      fresh = {(*shared_)[0], (*shared_)[1]};
    } else if (shared_ && block + 1 == blocks_.count) {
      fresh = {(*shared_)[2], (*shared_)[3]};
    } else {
      fresh = partial_block_maxima(g, at, n, scalars_.grad_scale);
    }
    old_m_ = state_data(2)[block];
    old_v_ = state_data(3)[block];
    new_m_ = fresh[0];
    new_v_ = fresh[1];
    run_segments(params, g, at, n);
    state_data(2)[block] = new_m_;
    state_data(3)[block] = new_v_;
    at += n;
  }
  if (end == size()) shared_.reset();
}

void Adam8bit::update(float* params, const float* grads, size_t offset, size_t count, bool decay) {
  const kernels::AdamScalars& s = scalars_;
  const bool decays = decay && config_.weight_decay != 0.0;
  uint8_t* qm = state_codes(0) + offset;
  uint8_t* qv = state_codes(1) + offset;
  const quant8::DynamicMap& signed_map = quant8::signed_map();
  const quant8::DynamicMap& unsigned_map = quant8::unsigned_map();
  for (size_t i = 0; i < count; ++i) {
    const Moments n = new_moments(grads[i], qm[i], qv[i], old_m_, old_v_, s);
    if (n.finite) {
      float param = params[i];
      if (decays) param = param * s.decay_factor;
      const float denom = std::sqrt(n.v) / s.bias_correction2_sqrt + s.eps;
      params[i] = param + s.neg_step_size * (n.m / denom);
    }
    qm[i] = quantize_by(signed_map, n.m, new_m_);
    qv[i] = quantize_by(unsigned_map, n.v, new_v_);
  }
}

}  // namespace zerodp::optim
