// SPDX-License-Identifier: Apache-2.0
#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace zerodp::optim {

void validate(const LossScalerConfig& c) {
  ZDP_CHECK(std::isfinite(c.initial_scale) && c.initial_scale > 0.0, ConfigError,
            "[loss_scaler] initial scale {} must be finite and > 0; use a power of two like 65536", c.initial_scale);
  if (c.mode == LossScaleMode::kStatic) {
    ZDP_CHECK(c.floor_patience >= 0, ConfigError, "[loss_scaler] floor patience {} must be >= 0", c.floor_patience);
    return;
  }
  ZDP_CHECK(c.window >= 1, ConfigError, "[loss_scaler] window {} must be >= 1; DeepSpeed's default is 1000", c.window);
  ZDP_CHECK(c.hysteresis >= 1, ConfigError, "[loss_scaler] hysteresis {} must be >= 1; DeepSpeed's default is 2",
            c.hysteresis);
  ZDP_CHECK(std::isfinite(c.min_scale) && c.min_scale > 0.0 && c.min_scale <= c.initial_scale, ConfigError,
            "[loss_scaler] minimum scale {} must be > 0 and <= the initial scale {}", c.min_scale, c.initial_scale);
  ZDP_CHECK(c.floor_patience >= 0, ConfigError, "[loss_scaler] floor patience {} must be >= 0", c.floor_patience);
}

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  validate(config_);
  state_.scale = config_.initial_scale;
  state_.hysteresis_left = config_.hysteresis;
}

bool LossScaler::update(bool overflow) {
  LossScalerState next = state_;
  if (overflow) {
    ++next.total_overflows;
    next.last_overflow_iteration = next.iteration;
    bool at_floor = !dynamic();
    if (dynamic()) {
      if (config_.hysteresis == 1 || next.hysteresis_left <= 1) {
        if (next.scale <= config_.min_scale) {
          at_floor = true;
        } else {
          next.scale = std::max(next.scale / 2.0, config_.min_scale);
        }
      } else {
        --next.hysteresis_left;
      }
    }
    if (at_floor) {
      ++next.floor_overflows;
      ZDP_CHECK(next.floor_overflows <= config_.floor_patience, Error,
                "[loss_scaler] gradients overflow at the {} loss scale {} ({} overflow(s) in a row, patience {}); "
                "the run cannot recover: lower the learning rate, clip gradients, use bf16, {}",
                dynamic() ? "minimum" : "static", next.scale, next.floor_overflows, config_.floor_patience,
                dynamic() ? "or lower the minimum loss scale" : "or use a smaller or dynamic loss scale");
    }
  } else {
    next.floor_overflows = 0;
    if (dynamic()) {
      if (config_.consecutive_hysteresis) next.hysteresis_left = config_.hysteresis;
      if ((next.iteration - next.last_overflow_iteration) % config_.window == 0) {
        if (!config_.consecutive_hysteresis) next.hysteresis_left = config_.hysteresis;
        next.scale = next.scale * 2.0;
      }
    }
  }
  ++next.iteration;
  state_ = next;
  return overflow;
}

void LossScaler::load_state(const LossScalerState& s) {
  ZDP_CHECK(std::isfinite(s.scale) && s.scale > 0.0, ConfigError, "[loss_scaler.load_state] scale {} must be > 0",
            s.scale);
  ZDP_CHECK(s.iteration >= 0 && s.last_overflow_iteration >= -1 && s.last_overflow_iteration < s.iteration, ConfigError,
            "[loss_scaler.load_state] iteration {} and last overflow {} are inconsistent", s.iteration,
            s.last_overflow_iteration);
  ZDP_CHECK(s.hysteresis_left >= 1 && s.floor_overflows >= 0 && s.total_overflows >= 0, ConfigError,
            "[loss_scaler.load_state] hysteresis {} must be >= 1 and counters >= 0", s.hysteresis_left);
  state_ = s;
}

}  // namespace zerodp::optim
