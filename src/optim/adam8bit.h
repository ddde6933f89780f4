// SPDX-License-Identifier: Apache-2.0
// 8-bit Adam on a rank's flat fp32 shard: AdamW's update (optim/adam.h, the
// same float operations in the same order) with both moments stored
// block-wise quantized, as bitsandbytes' blockwise 8-bit Adam does
// (Dettmers et al. 2022, arXiv 2110.02861; quant8.h): m as one byte of the
// signed dynamic map and v of the unsigned one per element, and one fp32
// absmax per 2048-element block for each. At step t, per element, in float:
//   g = grad * grad_scale
//   m = code_m[qm] * absmax_m;  v = code_v[qv] * absmax_v     (dequantize)
//   m = b1*m + (1-b1)*g;        v = b2*v + ((1-b2)*g)*g
//   p = p * (1 - lr*wd)                                        (decoupled decay)
//   p = p + (-lr/(1-b1^t)) * (m / (sqrt(v)/sqrt(1-b2^t) + eps))
// then per block: absmax_m = max |m|, absmax_v = max v over the block's new
// values, and qm = quantize(m / absmax_m), qv = quantize(v / absmax_v)
// (every code 0 in a block whose absmax is 0). The parameter update reads
// the new moments before they are quantized, as bitsandbytes' kernel does.
// Non-finite values, as bitsandbytes: an element whose g or new v is not
// finite (NaN or infinite g, or v overflowing) keeps its parameter (no
// update, no decay) and restarts both moments at 0, so the scales are always
// finite and never NaN. The engine never gets there (fp16 skips overflow
// steps, fp32/bf16 stop with an error).
// Blocks are anchored at the unit's first element (ShardOptions::unit_offset)
// and a shard's end blocks may be shared with other ranks: see
// Optimizer::block_end_maxima. State: "exp_avg_q8", "exp_avg_sq_q8" (one byte
// per element), "exp_avg_absmax", "exp_avg_sq_absmax" (one fp32 per block
// the shard touches): 2 bytes per element plus 8 per block.
// The loops are adam8bit_kernels.h's, one set per SIMD level (simd()), all
// giving the scalar loop's bits.
// Thread-safety: as Optimizer.
#pragma once

#include <optional>

#include "optim/adam8bit_kernels.h"
#include "optim/optim_kernels.h"
#include "optim/optimizer.h"
#include "optim/quant8.h"

namespace zerodp::optim {

class Adam8bit final : public Optimizer {
 public:
  // REQUIRES: validate()d config. Codes and scales start at zero (m = v = 0).
  Adam8bit(const AdamConfig& config, size_t shard_size, ShardOptions options = {});

  OptimizerKind kind() const override { return OptimizerKind::kAdam8bit; }
  const AdamConfig& config() const { return config_; }
  size_t quant_block_size() const override { return quant8::kBlockSize; }
  void share_block_end_maxima(const BlockEndMaxima& combined) override;
  void reset_states() override;

  // The blocks of the unit this shard touches (the scales' index range).
  quant8::BlockRange blocks() const { return blocks_; }
  std::span<uint8_t> exp_avg_codes() { return {state_codes(0), size()}; }
  std::span<uint8_t> exp_avg_sq_codes() { return {state_codes(1), size()}; }
  std::span<float> exp_avg_absmax() { return {state_data(2), blocks_.count}; }
  std::span<float> exp_avg_sq_absmax() { return {state_data(3), blocks_.count}; }

 private:
  void begin_step(double lr, float grad_scale) override;
  void apply(float* params, const float* grads, size_t begin, size_t count) override;
  void update(float* params, const float* grads, size_t offset, size_t count, bool decay) override;
  std::array<float, 2> partial_block_maxima(const float* grads, size_t begin, size_t count, float grad_scale) override;

  AdamConfig config_;
  kernels::AdamScalars scalars_;
  quant8::BlockRange blocks_;
  const kernels::Adam8bitKernels* kernels_;  // simd()'s loops (adam8bit_kernels.h)
  std::optional<BlockEndMaxima> shared_;     // for the next step's end blocks
  // The piece of a block being updated: its new scales (quantize) and its
  // new moments, computed by apply() into scratch that starts at shard
  // element scratch_at_.
  float new_m_ = 0.0f, new_v_ = 0.0f;
  const float* scratch_m_ = nullptr;
  const float* scratch_v_ = nullptr;
  size_t scratch_at_ = 0;
};

}  // namespace zerodp::optim
