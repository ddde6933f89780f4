// SPDX-License-Identifier: Apache-2.0
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"

namespace zerodp::optim {

LrScheduleKind parse_lr_schedule_kind(std::string_view name) {
  // One spelling (--help's, with hyphens); underscores, as earlier versions
  // wrote them, name the same schedules.
  std::string n(name);
  std::replace(n.begin(), n.end(), '_', '-');
  if (n == "constant") return LrScheduleKind::kConstant;
  if (n == "warmup") return LrScheduleKind::kWarmup;
  if (n == "warmup-linear" || n == "warmup-decay") return LrScheduleKind::kWarmupLinearDecay;
  if (n == "warmup-cosine") return LrScheduleKind::kWarmupCosine;
  ZDP_THROW(ConfigError, "[lr_schedule] unknown schedule '{}'; use constant, warmup, warmup-linear or warmup-cosine",
            name);
}

std::string_view lr_schedule_kind_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::kConstant:
      return "constant";
    case LrScheduleKind::kWarmup:
      return "warmup";
    case LrScheduleKind::kWarmupLinearDecay:
      return "warmup-linear";
    case LrScheduleKind::kWarmupCosine:
      return "warmup-cosine";
  }
  return "?";
}

WarmupType parse_warmup_type(std::string_view name) {
  if (name == "linear") return WarmupType::kLinear;
  if (name == "log") return WarmupType::kLog;
  ZDP_THROW(ConfigError, "[lr_schedule] unknown warm-up type '{}'; use linear or log", name);
}

LrSchedule::LrSchedule(const LrScheduleConfig& config) : config_(config) {
  const LrScheduleConfig& c = config_;
  ZDP_CHECK(std::isfinite(c.max_lr) && c.max_lr >= 0.0, ConfigError,
            "[lr_schedule] learning rate {} must be finite and >= 0", c.max_lr);
  ZDP_CHECK(std::isfinite(c.min_lr) && c.min_lr >= 0.0 && c.min_lr <= c.max_lr, ConfigError,
            "[lr_schedule] minimum learning rate {} must be in [0, {}] (the maximum)", c.min_lr, c.max_lr);
  ZDP_CHECK(c.warmup_steps >= 0, ConfigError, "[lr_schedule] warm-up steps {} must be >= 0", c.warmup_steps);
  ZDP_CHECK(c.kind == LrScheduleKind::kConstant || c.warmup_steps >= 1, ConfigError,
            "[lr_schedule] {} needs warm-up steps >= 1 (got {}); use the constant schedule for none",
            lr_schedule_kind_name(c.kind), c.warmup_steps);
  const bool decays = c.kind == LrScheduleKind::kWarmupLinearDecay || c.kind == LrScheduleKind::kWarmupCosine;
  ZDP_CHECK(!decays || c.total_steps >= 1, ConfigError,
            "[lr_schedule] {} needs the total number of steps (got {}); set it to the run's step count",
            lr_schedule_kind_name(c.kind), c.total_steps);
  ZDP_CHECK(c.warmup_min_ratio >= 0.0 && c.warmup_min_ratio <= 1.0 && c.cos_min_ratio >= 0.0 && c.cos_min_ratio <= 1.0,
            ConfigError, "[lr_schedule] warm-up min ratio {} and cosine min ratio {} must be in [0, 1]",
            c.warmup_min_ratio, c.cos_min_ratio);
  warmup_ = std::max<int64_t>(2, c.warmup_steps);
}

double LrSchedule::warmup_factor(int64_t step) const {
  const double t = static_cast<double>(step);
  if (config_.warmup_type == WarmupType::kLog)
    return std::log(t + 1.0) * (1.0 / std::log(static_cast<double>(warmup_)));
  return t / static_cast<double>(warmup_);
}

double LrSchedule::lr_at(int64_t step) const {
  ZDP_CHECK(step >= 0, ConfigError, "[lr_schedule] step {} must be >= 0", step);
  const LrScheduleConfig& c = config_;
  const double delta = c.max_lr - c.min_lr;
  const double total = static_cast<double>(c.total_steps);
  const double warm = static_cast<double>(warmup_);
  switch (c.kind) {
    case LrScheduleKind::kConstant:
      return c.max_lr;
    case LrScheduleKind::kWarmup:
      return step < warmup_ ? c.min_lr + delta * warmup_factor(step) : c.max_lr;
    case LrScheduleKind::kWarmupLinearDecay: {
      if (step < warmup_) return c.min_lr + delta * warmup_factor(step);
      const double gamma = std::max(0.0, (total - static_cast<double>(step)) / std::max(1.0, total - warm));
      return c.min_lr + delta * gamma;
    }
    case LrScheduleKind::kWarmupCosine: {
      double ratio;
      if (step < warmup_) {
        ratio = c.warmup_min_ratio + warmup_factor(step) * (1.0 - c.warmup_min_ratio);
      } else {
        const double progress = std::min(1.0, static_cast<double>(step - warmup_ + 1) / std::max(1.0, total - warm));
        const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
        ratio = std::max(0.0, c.cos_min_ratio + (1.0 - c.cos_min_ratio) * cosine);
      }
      return c.max_lr * ratio;
    }
  }
  return c.max_lr;
}

}  // namespace zerodp::optim
