// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules with DeepSpeed's semantics
// (deepspeed/runtime/lr_schedules.py: WarmupLR, WarmupDecayLR, WarmupCosineLR).
//
// lr_at(t) is the learning rate of the optimizer step with 0-based index t,
// i.e. Optimizer::step_count() before the step; steps skipped on overflow do
// not advance t (DeepSpeed steps its scheduler only after applied steps).
// lr_at(t) equals DeepSpeed's get_lr() with last_batch_iteration = t.
// (DeepSpeed's engine applies get_lr(t - 1) at step t, with the warm-up
// minimum at both t = 0 and t = 1; zerodp does not repeat the first value.)
//
// With W = max(2, warmup_steps), T = total_steps:
//   warm-up factor w(t), t < W:  linear t / W;  log ln(t + 1) / ln(W)
//   kConstant:          max_lr
//   kWarmup (WarmupLR): t < W: min_lr + (max_lr - min_lr) * w(t);  then max_lr
//   kWarmupLinearDecay (WarmupDecayLR): as kWarmup, then
//       min_lr + (max_lr - min_lr) * max(0, (T - t) / max(1, T - W))
//   kWarmupCosine (WarmupCosineLR): max_lr * ratio(t), where for t < W
//       ratio = warmup_min_ratio + (1 - warmup_min_ratio) * w(t), then with
//       p = min(1, (t - W + 1) / max(1, T - W)):
//       ratio = max(0, cos_min_ratio + (1 - cos_min_ratio) * (1 + cos(pi p)) / 2)
// All arithmetic is double. DeepSpeed's default warm-up type is log; zerodp's
// default is linear (the schedules are named "linear warm-up + ...").
// Thread-safety: immutable after construction; lr_at is pure.
#pragma once

#include <cstdint>
#include <string_view>

namespace zerodp::optim {

enum class LrScheduleKind : uint8_t {
  kConstant = 0,
  kWarmup = 1,             // DeepSpeed WarmupLR
  kWarmupLinearDecay = 2,  // DeepSpeed WarmupDecayLR
  kWarmupCosine = 3,       // DeepSpeed WarmupCosineLR
};
enum class WarmupType : uint8_t { kLinear = 0, kLog = 1 };

// "constant", "warmup", "warmup-linear" (also "warmup-decay"), "warmup-cosine"
// (underscores for hyphens name the same ones);
// ConfigError naming the accepted values otherwise.
LrScheduleKind parse_lr_schedule_kind(std::string_view name);
std::string_view lr_schedule_kind_name(LrScheduleKind kind);
// "linear" or "log".
WarmupType parse_warmup_type(std::string_view name);

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double max_lr = 1e-3;      // the peak (and constant) rate; WarmupCosineLR's optimizer lr
  double min_lr = 0.0;       // WarmupLR/WarmupDecayLR warmup_min_lr (start and end of decay)
  int64_t warmup_steps = 0;  // W >= 1 for the warm-up kinds (used as max(2, W), as DeepSpeed)
  int64_t total_steps = 0;   // T, for the decaying schedules
  WarmupType warmup_type = WarmupType::kLinear;
  double warmup_min_ratio = 0.0;  // WarmupCosineLR
  double cos_min_ratio = 0.0001;  // WarmupCosineLR (DeepSpeed default)
};

class LrSchedule {
 public:
  // Throws ConfigError for negative rates, min_lr > max_lr, negative step
  // counts, total_steps < 1 for the decaying schedules, or ratios outside [0, 1].
  explicit LrSchedule(const LrScheduleConfig& config = {});

  double lr_at(int64_t step) const;
  const LrScheduleConfig& config() const { return config_; }

 private:
  double warmup_factor(int64_t step) const;

  LrScheduleConfig config_;
  int64_t warmup_ = 2;  // max(2, warmup_steps)
};

}  // namespace zerodp::optim
