// SPDX-License-Identifier: Apache-2.0
// Loss scaling for fp16 training, with DeepSpeed's defaults and semantics
// (deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler).
//
// The engine multiplies the loss by scale() before backward, detects overflow
// on each rank's gradient shard, agrees on it with all-reduce(MAX), and calls
// update(overflow) once per step on every rank (so every rank's scaler stays
// identical); on overflow it skips the optimizer step.
//
// Dynamic mode, per update(overflow):
// - overflow: if hysteresis is down to 1 (or was configured as 1) the scale
//   halves, not below min_scale; otherwise hysteresis decreases by one and the
//   scale stays. Hysteresis is refilled only when the scale next doubles
//   (DeepSpeed's default consecutive_hysteresis = false), or after every clean
//   step with consecutive_hysteresis = true.
// - clean step: once `window` consecutive clean steps have passed since the
//   last overflow (or the start), the scale doubles, and again after each
//   further window. (This is DeepSpeed's original count,
//   (iter - last_overflow_iter) % window == 0; recent DeepSpeed releases wait
//   one step more.)
// Static mode: the scale never changes; overflowing steps are still skipped.
//
// Getting stuck: an overflow that would lower the scale below min_scale (or
// any overflow in static mode) counts as "at the floor"; DeepSpeed raises on
// the first one. Here `floor_patience` such overflows in a row are tolerated
// (skipped) and the next one throws zerodp::Error naming the scale and what to
// change; a clean step resets the count. Default 0 = DeepSpeed.
// Thread-safety: none; one scaler per rank, driven by the rank's step.
#pragma once

#include <cstdint>

namespace zerodp::optim {

enum class LossScaleMode : uint8_t { kDynamic = 0, kStatic = 1 };

struct LossScalerConfig {
  LossScaleMode mode = LossScaleMode::kDynamic;
  double initial_scale = 65536.0;  // 2^16 (DeepSpeed: initial_scale_power 16); the static scale too
  int64_t window = 1000;           // DeepSpeed loss_scale_window
  int hysteresis = 2;              // DeepSpeed hysteresis (delayed_shift)
  double min_scale = 1.0;          // DeepSpeed min_loss_scale
  bool consecutive_hysteresis = false;
  int floor_patience = 0;  // overflows in a row tolerated at the floor
};

// Throws ConfigError for a scale <= 0 or not finite, window < 1,
// hysteresis < 1, min_scale > initial_scale (dynamic) or patience < 0.
void validate(const LossScalerConfig& config);

// Everything a checkpoint needs to resume the scaler exactly.
struct LossScalerState {
  double scale = 65536.0;
  int64_t iteration = 0;  // update() calls so far
  int64_t last_overflow_iteration = -1;
  int hysteresis_left = 2;
  int floor_overflows = 0;      // overflows in a row at the floor
  int64_t total_overflows = 0;  // skipped steps so far
  friend bool operator==(const LossScalerState&, const LossScalerState&) = default;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config = {});

  double scale() const { return state_.scale; }
  // 1/scale(), the factor that unscales gradients.
  double inverse_scale() const { return 1.0 / state_.scale; }
  bool dynamic() const { return config_.mode == LossScaleMode::kDynamic; }
  const LossScalerConfig& config() const { return config_; }

  // One call per step with the agreed overflow flag; returns true when the
  // step must be skipped (== overflow). Throws zerodp::Error when stuck at
  // the floor beyond floor_patience (the state is left as it was).
  bool update(bool overflow);

  const LossScalerState& state() const { return state_; }
  // Throws ConfigError when the state is inconsistent (scale <= 0, ...).
  void load_state(const LossScalerState& state);

 private:
  LossScalerConfig config_;
  LossScalerState state_;
};

}  // namespace zerodp::optim
