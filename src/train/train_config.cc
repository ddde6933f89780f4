#include "train/train_config.h"

#include <cmath>

#include "core/error.h"
#include "train/value_checks.h"

namespace zerodp::train {

zero::EngineConfig TrainConfig::default_engine() {
  zero::EngineConfig e;
  e.stage = 3;
  e.dtype = Dtype::bf16();
  e.clip_norm = 1.0;
  e.optimizer.kind = optim::OptimizerKind::kAdamW;
  e.optimizer.adam.lr = 1.5e-3;
  e.optimizer.adam.weight_decay = 0.0;
  e.lr_schedule.kind = optim::LrScheduleKind::kWarmupCosine;
  e.lr_schedule.max_lr = 1.5e-3;
  e.lr_schedule.warmup_steps = 20;
  e.lr_schedule.total_steps = 0;  // 0: the run's --steps
  e.lr_schedule.cos_min_ratio = 0.1;
  return e;
}

void apply_data_defaults(TrainConfig& c) {
  const bool embedded = c.data.empty();
  if (c.micro_batch == 0) c.micro_batch = embedded ? kArithmeticMicroBatch : kTextMicroBatch;
  if (c.seq_len == 0) c.seq_len = embedded ? kArithmeticSeqLen : kTextSeqLen;
}

void validate(const TrainConfig& c) {
  ZDP_CHECK(c.ranks >= 1 || (c.ranks == 0 && c.backend == comm::Backend::kMpi), ConfigError,
            "[train] --ranks {} must be at least 1", c.ranks);
  ZDP_CHECK(c.ranks <= 1024, ConfigError, "[train] --ranks {} is more thread ranks than makes sense: use at most 1024",
            c.ranks);
  ZDP_CHECK(c.micro_batch >= 1, ConfigError, "[train] --micro-batch {} must be at least 1", c.micro_batch);
  ZDP_CHECK(c.seq_len >= 1, ConfigError, "[train] --seq-len {} must be at least 1", c.seq_len);
  ZDP_CHECK(c.steps >= 1, ConfigError, "[train] --steps {} must be at least 1", c.steps);
  ZDP_CHECK(c.eval_every >= 0, ConfigError, "[train] --eval-every {} must be >= 0 (0: only at the end)",
            c.eval_every);
  ZDP_CHECK(c.eval_batches >= 1, ConfigError, "[train] --eval-batches {} must be at least 1", c.eval_batches);
  ZDP_CHECK(c.comm_timeout_s > 0 && std::isfinite(c.comm_timeout_s), ConfigError,
            "[train] --comm-timeout {} must be a positive number of seconds", c.comm_timeout_s);
  ZDP_CHECK(c.sample_tokens >= 0, ConfigError, "[train] --sample-tokens {} must be >= 0", c.sample_tokens);
  ZDP_CHECK(c.held_out >= 0, ConfigError, "[train] --held-out {} must be >= 0 (0: no held-out sums)", c.held_out);
  ZDP_CHECK(c.save_every >= 0, ConfigError, "[train] --save-every {} must be >= 0", c.save_every);
  ZDP_CHECK(c.keep_last >= 0, ConfigError, "[train] --keep-last {} must be >= 0", c.keep_last);
  ZDP_CHECK(c.init_from.empty() || c.resume_dir.empty(), ConfigError,
            "[train] --init-from and --resume were both given: a resume restores the weights it saved; pass one");
  // The engine's values, refused naming their flag and --config key.
  check_engine_values(c);
  zero::validate(c.engine);
}

}  // namespace zerodp::train

namespace zerodp::train {

void resolve_batch(TrainConfig& c, int ranks) {
  if (c.engine.lr_schedule.total_steps == 0) c.engine.lr_schedule.total_steps = c.steps;
  if (c.train_batch_size <= 0) return;
  const int per_accum = c.micro_batch * ranks;
  if (c.derive_grad_accum) {
    ZDP_CHECK(c.train_batch_size % per_accum == 0, ConfigError,
              "[config] train_batch_size {} is not a multiple of micro-batch {} x {} ranks: change one of them",
              c.train_batch_size, c.micro_batch, ranks);
    c.engine.grad_accum = c.train_batch_size / per_accum;
    return;
  }
  ZDP_CHECK(c.train_batch_size == per_accum * c.engine.grad_accum, ConfigError,
            "[config] train_batch_size {} != micro-batch {} x gradient accumulation {} x {} ranks = {}: make them "
            "agree (DeepSpeed's rule)",
            c.train_batch_size, c.micro_batch, c.engine.grad_accum, ranks, per_accum * c.engine.grad_accum);
}

}  // namespace zerodp::train
