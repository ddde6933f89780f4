// SPDX-License-Identifier: Apache-2.0
#include "optim/adam8bit.h"

#include <algorithm>
#include <cmath>

#include "optim/adam.h"
#include "optim/adam8bit_kernels.h"

namespace zerodp::optim {

Adam8bit::Adam8bit(const AdamConfig& config, size_t shard_size, ShardOptions options)
    : Optimizer(shard_size, std::move(options)),
      config_(config),
      blocks_(quant8::blocks_touched(unit_offset(), shard_size)),
      kernels_(&kernels::adam8bit_kernels(simd())) {
  add_state(StateKind::kExpAvgCodes);
  add_state(StateKind::kExpAvgSqCodes);
  add_state(StateKind::kExpAvgAbsmax, blocks_.count);
  add_state(StateKind::kExpAvgSqAbsmax, blocks_.count);
  if (states_attached()) Adam8bit::reset_states();
}

// Zeroed codes are not m = 0: the code of 0 is index 127 of the signed map
// (0 of the unsigned one). With zero scales every code dequantizes to 0
// anyway, but the codes are state a checkpoint keeps, so start from 0's.
void Adam8bit::reset_states() {
  Optimizer::reset_states();
  std::fill_n(state_codes(0), size(), quant8::signed_map().zero);
  std::fill_n(state_codes(1), size(), quant8::unsigned_map().zero);
}

void Adam8bit::share_block_end_maxima(const BlockEndMaxima& combined) { shared_ = combined; }

void Adam8bit::begin_step(double lr, float grad_scale) {
  scalars_ = adam_scalars(config_, step_count(), lr, grad_scale);
}

std::array<float, 2> Adam8bit::partial_block_maxima(const float* grads, size_t begin, size_t count, float grad_scale) {
  // The moments need only the betas and the grad scale (no step count, no lr).
  const kernels::AdamScalars s = adam_scalars(config_, 1, 0.0, grad_scale);
  const size_t block = (unit_offset() + begin) / quant8::kBlockSize - blocks_.first;
  alignas(64) std::array<float, quant8::kBlockSize> m, v;  // count <= one block
  std::array<float, 2> maxima{0.0f, 0.0f};
  kernels_->moments(grads, state_codes(0) + begin, state_codes(1) + begin, count, state_data(2)[block],
                    state_data(3)[block], s, m.data(), v.data(), maxima.data());
  return maxima;
}

// Block by block: the new moments of the piece and their maxima (one pass,
// into scratch on the stack), the block's new scales (the shared ones for a
// shard's end blocks when given, else those maxima), then the update from
// the scratch, split at the no-decay ranges.
void Adam8bit::apply(float* params, const float* grads, size_t begin, size_t count) {
  alignas(64) std::array<float, quant8::kBlockSize> m, v;
  const size_t end = begin + count;
  for (size_t at = begin; at < end;) {
    const size_t unit_at = unit_offset() + at;
    const size_t block = unit_at / quant8::kBlockSize - blocks_.first;
    const size_t n = std::min(end - at, (unit_at / quant8::kBlockSize + 1) * quant8::kBlockSize - unit_at);
    const float* g = grads + (at - begin);
    std::array<float, 2> fresh{0.0f, 0.0f};
    kernels_->moments(g, state_codes(0) + at, state_codes(1) + at, n, state_data(2)[block], state_data(3)[block],
                      scalars_, m.data(), v.data(), fresh.data());
    if (shared_ && block == 0) {
      fresh = {(*shared_)[0], (*shared_)[1]};
    } else if (shared_ && block + 1 == blocks_.count) {
      fresh = {(*shared_)[2], (*shared_)[3]};
    }
    new_m_ = fresh[0];
    new_v_ = fresh[1];
    scratch_m_ = m.data();
    scratch_v_ = v.data();
    scratch_at_ = at;
    run_segments(params, g, at, n);
    state_data(2)[block] = new_m_;
    state_data(3)[block] = new_v_;
    at += n;
  }
  scratch_m_ = scratch_v_ = nullptr;
  if (end == size()) shared_.reset();
}

void Adam8bit::update(float* params, const float* /*grads*/, size_t offset, size_t count, bool decay) {
  const size_t at = offset - scratch_at_;  // inside the piece apply() holds in scratch
  kernels_->update(params, scratch_m_ + at, scratch_v_ + at, count, new_m_, new_v_, scalars_,
                   decay && config_.weight_decay != 0.0, state_codes(0) + offset, state_codes(1) + offset);
}

}  // namespace zerodp::optim
