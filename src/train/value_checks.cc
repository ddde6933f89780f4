// SPDX-License-Identifier: Apache-2.0
#include "train/value_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "optim/lr_schedule.h"
#include "train/settings.h"

namespace zerodp::train {
namespace {

void check_adafactor(const TrainConfig& c, const optim::AdafactorConfig& a) {
  const std::string relative = c.spelled("relative-step");
  // The run's lr is the schedule's; relative steps replace it, so one given
  // (a flag, the config file or the checkpoint) would be ignored. A default
  // or a DeepSpeed "auto" filled from one is not the user's.
  const bool lr_given = c.given(kLrSetting) || c.source_kind(kLrSetting) == SourceKind::kCheckpoint;
  ZDP_CHECK(!(a.relative_step && lr_given), ConfigError,
            "[train] {} {} and Adafactor's relative step sizes cannot be combined (as Hugging Face's): set {} "
            "false to use the lr, or drop it",
            c.spelled(kLrSetting), c.engine.lr_schedule.max_lr, relative);
  ZDP_CHECK(a.relative_step || (lr_given && c.engine.lr_schedule.max_lr > 0.0), ConfigError,
            "[train] {} false needs an explicit {} > 0, e.g. 1e-3", relative, c.spelled(kLrSetting));
  ZDP_CHECK(!a.warmup_init || a.relative_step, ConfigError, "[train] {} needs {} true", c.spelled("warmup-init"),
            relative);
}

void check_optimizer(const TrainConfig& c, const optim::OptimizerConfig& o) {
  if (o.kind == optim::OptimizerKind::kAdafactor) check_adafactor(c, o.adafactor);
  const bool sgd = o.kind == optim::OptimizerKind::kSgd;
  ZDP_CHECK(!sgd || !o.sgd.nesterov || o.sgd.momentum > 0.0, ConfigError,
            "[train] optimizer.params.nesterov in --config needs a momentum > 0: set --momentum (or "
            "optimizer.params.momentum) to e.g. 0.9, or turn nesterov off");
}

void check_schedule(const TrainConfig& c, const optim::LrScheduleConfig& s) {
  ZDP_CHECK(s.min_lr <= s.max_lr, ConfigError,
            "[train] scheduler.params.warmup_min_lr {} in --config must be at most the peak {} (--lr or "
            "scheduler.params.warmup_max_lr)",
            s.min_lr, s.max_lr);
  ZDP_CHECK(s.kind == optim::LrScheduleKind::kConstant || s.warmup_steps >= 1, ConfigError,
            "[train] {} {}: the {} schedule needs at least 1 "
            "warm-up step; use --schedule constant for none",
            c.spelled("warmup"), s.warmup_steps, optim::lr_schedule_kind_name(s.kind));
  ZDP_CHECK(s.total_steps >= 0, ConfigError,
            "[train] scheduler.params.total_num_steps {} in --config must be >= 1 (or leave it out: the run's --steps)",
            s.total_steps);
}

void check_loss_scaler(const optim::LossScalerConfig& s) {
  ZDP_CHECK(std::isfinite(s.initial_scale) && s.initial_scale > 0.0, ConfigError,
            "[train] fp16 loss scale {} (--loss-scale, or fp16.loss_scale / fp16.initial_scale_power in --config) "
            "must be finite and > 0, e.g. 65536",
            s.initial_scale);
  if (s.mode == optim::LossScaleMode::kStatic) return;
  ZDP_CHECK(s.window >= 1, ConfigError,
            "[train] fp16.loss_scale_window {} in --config must be at least 1 (DeepSpeed's default: 1000)", s.window);
  ZDP_CHECK(s.hysteresis >= 1, ConfigError,
            "[train] fp16.hysteresis {} in --config must be at least 1 (DeepSpeed's default: 2)", s.hysteresis);
  ZDP_CHECK(std::isfinite(s.min_scale) && s.min_scale > 0.0 && s.min_scale <= s.initial_scale, ConfigError,
            "[train] fp16.min_loss_scale {} in --config must be > 0 and at most the initial loss scale {}", s.min_scale,
            s.initial_scale);
}

}  // namespace

void check_engine_values(const TrainConfig& c) {
  const zero::EngineConfig& e = c.engine;
  check_setting_values(c);  // each setting's own bounds (its row's check)
  check_optimizer(c, e.optimizer);
  check_schedule(c, e.lr_schedule);
  if (e.dtype == Dtype::fp16()) check_loss_scaler(e.loss_scaler);
  // The compressed collectives exist where the stage has them: refused, not ignored.
  const StageTraits& t = traits(e.stage);
  ZDP_CHECK(e.quantize_weights == comm::Quantization::kNone || t.gathers_on_acquire, ConfigError,
            "[train] {} needs stage 3 (only stage 3 gathers parameters for compute; this run is stage {}): add "
            "--stage 3 or leave it out",
            c.spelled("quantize-weights"), e.stage);
  ZDP_CHECK(e.quantize_grads == comm::Quantization::kNone || t.reduce == GradReduce::kReduceScatter, ConfigError,
            "[train] {} needs stage 1, 2 or 3 (stage 0 all-reduces its gradients, which is not quantized): use "
            "--stage 1-3 or leave it out",
            c.spelled("quantize-grads"));
  ZDP_CHECK(comm::quant_block_offered(e.quantize_block), ConfigError,
            "[train] --quantize-block {} is not offered: use a power of two from {} to {}", e.quantize_block,
            comm::kMinQuantBlock, comm::kMaxQuantBlock);
  // Parameter offload exists where the parameters are partitioned and are
  // not the master weights.
  if (!e.offload_params_dir.empty()) {
    ZDP_CHECK(t.partitions_params, ConfigError,
              "[train] {} needs stage 3 (only stage 3 partitions the parameters; this run is stage {}): add --stage 3, "
              "or use --offload-optimizer to move the optimizer's states",
              c.spelled("offload-params"), e.stage);
    ZDP_CHECK(e.dtype.is_low_precision(), ConfigError,
              "[train] {} needs --precision bf16 or fp16 (at fp32 the parameters are the master weights, which "
              "--offload-optimizer moves): use --precision bf16, or --offload-optimizer",
              c.spelled("offload-params"));
  }
  // The compressed collectives' settings mean nothing without one of them.
  const bool compressed =
      e.quantize_weights != comm::Quantization::kNone || e.quantize_grads != comm::Quantization::kNone;
  for (const auto& [setting, what] : {std::pair{"quantize-block", "sizes the compressed collectives' blocks"},
                                      std::pair{"quantize-rounding", "rounds the compressed collectives' codes"},
                                      std::pair{"quantize-delay", "delays the compressed collectives"}}) {
    ZDP_CHECK(compressed || !c.given(setting), ConfigError,
              "[train] --{} {}: add --quantize-weights or --quantize-grads, or leave it out", setting, what);
  }
}

void check_shard_group(const TrainConfig& c, int ranks) {
  const int g = c.engine.shard_group_size;
  if (g == 0 || g == ranks) return;
  const std::string name = c.spelled("shard-group-size");
  ZDP_CHECK(g >= 1, ConfigError, "[train] {} {} must be at least 1 (0: all ranks, the flat layout)", name, g);
  ZDP_CHECK(g >= 1 && g < ranks && ranks % g == 0, ConfigError,
            "[train] {} {} does not divide the {} ranks: use a divisor of {} (such as the ranks of one host) or "
            "leave it out",
            name, g, ranks, ranks);
  ZDP_CHECK(c.engine.stage != Stage::k0, ConfigError,
            "[train] {} {} needs stage 1, 2 or 3 (stage 0 partitions nothing; every rank holds everything): use "
            "--stage 1-3 or leave it out",
            name, g);
}

void check_pipeline(const TrainConfig& c, int ranks) {
  const int p = c.pipeline_stages;
  const std::string name = c.spelled("pipeline-stages");
  if (p == 1) {
    ZDP_CHECK(c.pipeline_cut.size() <= 1, ConfigError, "[train] --pipeline-cut gives {} stages but {} is 1: give {} {}",
              c.pipeline_cut.size(), name, name, c.pipeline_cut.size());
    return;
  }
  ZDP_CHECK(ranks % p == 0, ConfigError,
            "[train] {} {} does not divide the {} ranks: use a rank count that is a multiple of {} (N = stages x "
            "replicas)",
            name, p, ranks, p);
  ZDP_CHECK(c.pipeline_cut.empty() || c.pipeline_cut.size() == static_cast<size_t>(p), ConfigError,
            "[train] --pipeline-cut gives {} stages but {} is {}: give one number of blocks per stage",
            c.pipeline_cut.size(), name, p);
  ZDP_CHECK(!traits(c.engine.stage).partitions_grads, ConfigError,
            "[train] --stage {} with {}: a pipeline accumulates each stage's gradients over its micro-batches, "
            "which partitioned gradients would reduce-scatter once per micro-batch (DeepSpeed refuses it too); use "
            "--stage 0 or 1",
            stage_number(c.engine.stage), name);
  ZDP_CHECK(c.engine.offload_optimizer_dir.empty() && c.engine.offload_params_dir.empty(), ConfigError,
            "[train] --offload-optimizer and --offload-params are not built for pipeline stages: leave them out "
            "with {}",
            name);
  ZDP_CHECK(c.engine.shard_group_size == 0, ConfigError,
            "[train] --shard-group-size with {}: a pipeline's replicas are its own groups; leave one of them out",
            name);
}

}  // namespace zerodp::train
