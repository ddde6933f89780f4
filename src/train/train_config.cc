// SPDX-License-Identifier: Apache-2.0
#include "train/train_config.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "train/settings.h"
#include "train/value_checks.h"

namespace zerodp::train {

zero::EngineConfig TrainConfig::default_engine() {
  zero::EngineConfig e;
  e.stage = Stage::k3;
  e.dtype = Dtype::bf16();
  e.clip_norm = 1.0;
  e.optimizer.kind = optim::OptimizerKind::kAdamW;
  e.optimizer.adam.weight_decay = 0.0;
  e.lr_schedule.kind = optim::LrScheduleKind::kWarmupCosine;
  e.lr_schedule.max_lr = 1.5e-3;
  e.lr_schedule.warmup_steps = 20;
  e.lr_schedule.total_steps = 0;  // 0: the run's --steps
  e.lr_schedule.cos_min_ratio = 0.1;
  return e;
}

std::string TrainConfig::source_of(const std::string& setting) const {
  const auto it = sources.find(setting);
  return it == sources.end() ? defaults : it->second;
}

SourceKind source_kind_of(std::string_view s) {
  if (s.starts_with("flag ")) return SourceKind::kFlag;
  if (s.starts_with("config ")) return SourceKind::kConfig;
  if (s.starts_with("checkpoint")) return SourceKind::kCheckpoint;
  if (s.starts_with("derived")) return SourceKind::kDerived;
  if (s.starts_with("detected")) return SourceKind::kDetected;
  return SourceKind::kDefault;
}

SourceKind TrainConfig::source_kind(const std::string& setting) const {
  const auto it = sources.find(setting);
  return it == sources.end() ? SourceKind::kDefault : source_kind_of(it->second);
}

bool TrainConfig::given(const std::string& setting) const {
  const SourceKind kind = source_kind(setting);
  return kind == SourceKind::kFlag || kind == SourceKind::kConfig;
}

std::string TrainConfig::spelled(const std::string& setting, const std::string& key) const {
  switch (source_kind(setting)) {
    case SourceKind::kFlag:
      return sources.at(setting).substr(5);
    case SourceKind::kConfig:
      return "--config's " + sources.at(setting).substr(7);
    default:
      return key.empty() ? "--" + setting : fmt::format("--{} ({} in --config)", setting, key);
  }
}

std::string TrainConfig::spelled(const std::string& setting) const {
  const SettingRow* row = find_setting(setting);
  return spelled(setting, row != nullptr ? std::string(row->flag.ds.path) : std::string());
}

void apply_data_defaults(TrainConfig& c) {
  const bool embedded = c.data.empty();
  // With train_batch_size the micro-batch is derived from it (resolve_batch).
  if (c.micro_batch == 0 && c.train_batch_size == 0) {
    c.micro_batch = embedded ? kArithmeticMicroBatch : kTextMicroBatch;
    c.sources[kMicroBatchSetting] =
        embedded ? "zerodp default for the embedded corpus" : "zerodp default for text data";
  }
  if (c.seq_len == 0) c.seq_len = embedded ? kArithmeticSeqLen : kTextSeqLen;
}

void check_start_point(const TrainConfig& c) {
  ZDP_CHECK(c.init_from.empty() || c.resume_dir.empty(), ConfigError,
            "[train] --init-from and --resume were both given: a resume restores the weights it saved; pass one");
}

void validate(const TrainConfig& c) {
  ZDP_CHECK(c.ranks >= 1 || (c.ranks == 0 && c.backend == comm::Backend::kMpi), ConfigError,
            "[train] --ranks {} must be at least 1", c.ranks);
  ZDP_CHECK(c.ranks <= 1024, ConfigError, "[train] --ranks {} is more thread ranks than makes sense: use at most 1024",
            c.ranks);
  ZDP_CHECK(c.micro_batch >= 1 || (c.micro_batch == 0 && c.train_batch_size > 0), ConfigError,
            "[train] --micro-batch {} must be at least 1", c.micro_batch);
  ZDP_CHECK(c.seq_len >= 1, ConfigError, "[train] --seq-len {} must be at least 1", c.seq_len);
  ZDP_CHECK(c.steps >= 1, ConfigError, "[train] --steps {} must be at least 1", c.steps);
  ZDP_CHECK(c.eval_every >= 0, ConfigError, "[train] --eval-every {} must be >= 0 (0: only at the end)", c.eval_every);
  ZDP_CHECK(c.eval_batches >= 1, ConfigError, "[train] --eval-batches {} must be at least 1", c.eval_batches);
  ZDP_CHECK(c.comm_timeout_s > 0 && std::isfinite(c.comm_timeout_s), ConfigError,
            "[train] --comm-timeout {} must be a positive number of seconds", c.comm_timeout_s);
  ZDP_CHECK(c.checkpoint_timeout_s > 0 && std::isfinite(c.checkpoint_timeout_s), ConfigError,
            "[train] --checkpoint-timeout {} must be a positive number of seconds", c.checkpoint_timeout_s);
  ZDP_CHECK(c.sample_tokens >= 0, ConfigError, "[train] --sample-tokens {} must be >= 0", c.sample_tokens);
  ZDP_CHECK(c.temperature >= 0 && std::isfinite(c.temperature), ConfigError,
            "[train] --temperature {} must be >= 0 (0 = greedy)", c.temperature);
  ZDP_CHECK(c.top_k >= 0, ConfigError, "[train] --top-k {} must be >= 0 (0 = every token)", c.top_k);
  ZDP_CHECK(c.held_out >= 0, ConfigError, "[train] --held-out {} must be >= 0 (0: no held-out sums)", c.held_out);
  ZDP_CHECK(c.save_every >= 0, ConfigError, "[train] --save-every {} must be >= 0", c.save_every);
  ZDP_CHECK(c.keep_last >= 0, ConfigError, "[train] --keep-last {} must be >= 0", c.keep_last);
  ZDP_CHECK(c.tokenizer.empty() || !c.data.empty(), ConfigError,
            "[train] --tokenizer {} needs --data: the embedded arithmetic corpus is bytes; give --data a text file",
            c.tokenizer);
  check_start_point(c);
  // The engine's values, refused naming their flag and --config key.
  check_engine_values(c);
  zero::validate(c.engine);
}

}  // namespace zerodp::train

namespace zerodp::train {

void resolve_batch(TrainConfig& c, int world) {
  check_pipeline(c, world);
  // DeepSpeed's rule counts the data-parallel ranks: a pipeline's replicas.
  const int ranks = c.data_parallel_ranks(world);
  check_shard_group(c, ranks);
  if (c.engine.lr_schedule.total_steps == 0) c.engine.lr_schedule.total_steps = c.steps;
  if (c.resume_micro_batches > 0) {
    // Rank r's micro-batch m is global micro-batch m * N + r (sampler.h):
    // the same M micro-batches per step train on the same data at any N.
    const int m = c.resume_micro_batches;
    ZDP_CHECK(m % ranks == 0, ConfigError,
              "[train] the checkpoint's step is {} micro-batches (grad-accum x ranks as saved), which {} ranks "
              "cannot share evenly: resume on a rank count that divides {}, or give --grad-accum with "
              "--resume-override grad-accum to change the global batch",
              m, ranks, m);
    if (c.engine.grad_accum != m / ranks) {
      c.engine.grad_accum = m / ranks;
      c.sources[kGradAccumSetting] = fmt::format("derived: the checkpoint's {} micro-batches per step over {} rank{}",
                                                 m, ranks, ranks == 1 ? "" : "s");
    }
  }
  if (c.train_batch_size <= 0) return;
  const int tbs = c.train_batch_size;
  const bool micro_given = c.micro_batch > 0;
  if (micro_given && c.grad_accum_given) {
    const int64_t product = static_cast<int64_t>(c.micro_batch) * c.engine.grad_accum * ranks;
    ZDP_CHECK(tbs == product, ConfigError,
              "[config] train_batch_size {} != micro-batch {} x gradient accumulation {} x {} ranks = {}: make them "
              "agree (DeepSpeed's rule), or leave one of them out to have it derived",
              tbs, c.micro_batch, c.engine.grad_accum, ranks, product);
    return;
  }
  if (micro_given) {
    ZDP_CHECK(tbs % (c.micro_batch * ranks) == 0, ConfigError,
              "[config] train_batch_size {} is not a multiple of micro-batch {} x {} ranks: change one of them", tbs,
              c.micro_batch, ranks);
    c.engine.grad_accum = tbs / (c.micro_batch * ranks);
    c.grad_accum_given = true;
    c.sources[kGradAccumSetting] =
        fmt::format("derived: train_batch_size {} / (micro-batch {} x {} ranks)", tbs, c.micro_batch, ranks);
    return;
  }
  const int accum = c.grad_accum_given ? c.engine.grad_accum : 1;
  ZDP_CHECK(tbs % (accum * ranks) == 0, ConfigError,
            "[config] train_batch_size {} is not a multiple of gradient accumulation {} x {} ranks: change one of them",
            tbs, accum, ranks);
  c.micro_batch = tbs / (accum * ranks);
  c.sources[kMicroBatchSetting] =
      fmt::format("derived: train_batch_size {} / (gradient accumulation {} x {} ranks)", tbs, accum, ranks);
  if (!c.grad_accum_given) {
    c.engine.grad_accum = 1;
    c.grad_accum_given = true;
    c.sources[kGradAccumSetting] = "DeepSpeed default with train_batch_size alone";
  }
}

}  // namespace zerodp::train
