// SPDX-License-Identifier: Apache-2.0
#include "train/ds_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/effective_config.h"
#include "train/settings.h"

namespace zerodp::train {
namespace {

struct Applied {
  TrainConfig config;
  std::vector<std::string> warnings;
};

Applied apply(const std::string& json) {
  Applied a;
  apply_deepspeed_config(json, "test.json", a.config, [&](const std::string& w) { a.warnings.push_back(w); });
  return a;
}

std::string error_of(const std::string& json) {
  try {
    apply(json);
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "";
}

TEST(DeepSpeedConfig, MapsTheKeysThatMeanSomethingHere) {
  const Applied a = apply(R"({
    "train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "steps_per_print": 7, "gradient_clipping": 0.5,
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e5, "overlap_comm": false},
    "fp16": {"enabled": true, "initial_scale_power": 12, "loss_scale_window": 500, "hysteresis": 3,
             "min_loss_scale": 2},
    "optimizer": {"type": "AdamW", "params": {"lr": 0.002, "betas": [0.8, 0.95], "eps": 1e-7,
                                               "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_num_steps": 10,
                                                       "cos_min_ratio": 0.05}}
  })");
  const TrainConfig& c = a.config;
  EXPECT_EQ(c.train_batch_size, 32);
  EXPECT_EQ(c.micro_batch, 4);
  EXPECT_EQ(c.engine.grad_accum, 2);
  EXPECT_TRUE(c.grad_accum_given);
  EXPECT_EQ(c.source_of("stage"), "config zero_optimization.stage");
  EXPECT_EQ(c.source_of("lr"), "config optimizer.params.lr");
  EXPECT_EQ(c.source_of("precision"), "config fp16.enabled");
  EXPECT_EQ(c.source_of("seed"), "DeepSpeed default");
  EXPECT_EQ(c.log_every, 7);
  EXPECT_EQ(c.engine.clip_norm, 0.5);
  EXPECT_EQ(c.engine.stage, Stage::k2);
  EXPECT_EQ(c.engine.bucket_elements, 500000u);
  EXPECT_FALSE(c.engine.overlap);
  EXPECT_EQ(c.engine.dtype, Dtype::fp16());
  EXPECT_EQ(c.engine.loss_scaler.initial_scale, 4096.0);
  EXPECT_EQ(c.engine.loss_scaler.window, 500);
  EXPECT_EQ(c.engine.loss_scaler.hysteresis, 3);
  EXPECT_EQ(c.engine.loss_scaler.min_scale, 2.0);
  EXPECT_EQ(c.engine.optimizer.kind, optim::OptimizerKind::kAdamW);
  EXPECT_EQ(c.engine.lr_schedule.max_lr, 0.002);
  EXPECT_EQ(c.engine.optimizer.adam.beta2, 0.95);
  EXPECT_EQ(c.engine.optimizer.adam.weight_decay, 0.1);
  EXPECT_EQ(c.engine.lr_schedule.kind, optim::LrScheduleKind::kWarmupCosine);
  EXPECT_EQ(c.engine.lr_schedule.total_steps, 100);
  EXPECT_EQ(c.engine.lr_schedule.warmup_steps, 10);
  EXPECT_TRUE(a.warnings.empty());
}

TEST(DeepSpeedConfig, AdamIsAdamWUnlessAdamWModeIsOff) {
  EXPECT_EQ(apply(R"({"optimizer": {"type": "Adam"}})").config.engine.optimizer.kind, optim::OptimizerKind::kAdamW);
  EXPECT_EQ(apply(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})").config.engine.optimizer.kind,
            optim::OptimizerKind::kAdam);
  EXPECT_EQ(apply(R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}})")
                .config.engine.optimizer.sgd.momentum,
            0.9);
}

// DeepSpeed's "Lion" (FusedLion / DeepSpeedCPULion): lr, betas and
// weight_decay; what is not given takes DeepSpeed's Lion defaults, which are
// its Adam's (lr 1e-3, betas 0.9/0.999), not the paper's 0.9/0.99.
TEST(DeepSpeedConfig, LionTakesItsParamsAndDeepSpeedsDefaults) {
  const Applied a =
      apply(R"({"optimizer": {"type": "Lion", "params": {"lr": 3e-4, "betas": [0.95, 0.98], "weight_decay": 0.5}}})");
  const optim::OptimizerConfig& o = a.config.engine.optimizer;
  EXPECT_EQ(o.kind, optim::OptimizerKind::kLion);
  EXPECT_EQ(a.config.engine.lr_schedule.max_lr, 3e-4);
  EXPECT_EQ(o.lion.beta1, 0.95);
  EXPECT_EQ(o.lion.beta2, 0.98);
  EXPECT_EQ(o.lion.weight_decay, 0.5);
  EXPECT_EQ(a.config.sources.at("optimizer"), "config optimizer.type");
  EXPECT_TRUE(a.warnings.empty());
  const Applied lion_defaults = apply(R"({"optimizer": {"type": "lion"}})");
  const optim::OptimizerConfig& d = lion_defaults.config.engine.optimizer;
  EXPECT_EQ(d.kind, optim::OptimizerKind::kLion);
  EXPECT_EQ(lion_defaults.config.engine.lr_schedule.max_lr, 1e-3);
  EXPECT_EQ(d.lion.beta1, 0.9);
  EXPECT_EQ(d.lion.beta2, 0.999);
  EXPECT_EQ(d.lion.weight_decay, 0.0);
  // SGD with momentum: its DeepSpeed/PyTorch names, with nesterov and decay.
  const Applied sgd = apply(R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9, "nesterov": true,
                "weight_decay": 0.01}}})");
  const optim::OptimizerConfig& s = sgd.config.engine.optimizer;
  EXPECT_EQ(s.kind, optim::OptimizerKind::kSgd);
  EXPECT_EQ(sgd.config.engine.lr_schedule.max_lr, 0.1);
  EXPECT_EQ(s.sgd.momentum, 0.9);
  EXPECT_TRUE(s.sgd.nesterov);
  EXPECT_EQ(s.sgd.weight_decay, 0.01);
}

// bitsandbytes' class names for 8-bit Adam, with Adam's params; L2 decay
// (adam_w_mode false) is refused.
TEST(DeepSpeedConfig, Adam8bitTakesBitsandbytesNamesAndAdamsParams) {
  const Applied a = apply(
      R"({"optimizer": {"type": "AdamW8bit", "params": {"lr": 2e-4, "betas": [0.9, 0.95], "eps": 1e-6,
          "weight_decay": 0.1}}})");
  const optim::OptimizerConfig& o = a.config.engine.optimizer;
  EXPECT_EQ(o.kind, optim::OptimizerKind::kAdam8bit);
  EXPECT_EQ(a.config.engine.lr_schedule.max_lr, 2e-4);
  EXPECT_EQ(o.adam.beta2, 0.95);
  EXPECT_EQ(o.adam.eps, 1e-6);
  EXPECT_EQ(o.adam.weight_decay, 0.1);
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_EQ(apply(R"({"optimizer": {"type": "adam8bit"}})").config.engine.optimizer.kind,
            optim::OptimizerKind::kAdam8bit);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Adam8bit", "params": {"adam_w_mode": false}}})")
                .find("decays decoupled (as AdamW); remove adam_w_mode: false"),
            std::string::npos);
  // Which units keep fp32 moments: bitsandbytes' min_8bit_size and zerodp's
  // fp32_embedding; the defaults are the CLI's.
  EXPECT_TRUE(o.adam.fp32_embedding);
  EXPECT_EQ(o.adam.min_8bit_size, 4096u);
  const optim::OptimizerConfig off =
      apply(R"({"optimizer": {"type": "Adam8bit", "params": {"min_8bit_size": 0, "fp32_embedding": false}}})")
          .config.engine.optimizer;
  EXPECT_FALSE(off.adam.fp32_embedding);
  EXPECT_EQ(off.adam.min_8bit_size, 0u);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Adam8bit", "params": {"min_8bit_size": -1}}})")
                .find("min_8bit_size -1 must be >= 0"),
            std::string::npos);
  // Not AdamW's: there the keys are unknown.
  EXPECT_NE(error_of(R"({"optimizer": {"type": "AdamW", "params": {"min_8bit_size": 0}}})"), "");
  // A pair is two numbers: betas, and Adafactor's eps.
  EXPECT_NE(error_of(R"({"optimizer": {"type": "AdamW8bit", "params": {"betas": [0.9]}}})")
                .find("optimizer.params.betas must be two numbers"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Adafactor", "params": {"eps": 1e-30}}})")
                .find("optimizer.params.eps must be two numbers"),
            std::string::npos);
}

// DeepSpeed has no Adafactor: "Adafactor" takes Hugging Face transformers'
// Adafactor's parameter names and defaults.
TEST(DeepSpeedConfig, AdafactorTakesHuggingFacesNamesAndDefaults) {
  const Applied d = apply(R"({"optimizer": {"type": "Adafactor"}})");
  const optim::AdafactorConfig& def = d.config.engine.optimizer.adafactor;
  EXPECT_EQ(d.config.engine.optimizer.kind, optim::OptimizerKind::kAdafactor);
  EXPECT_EQ(d.config.source_kind("lr"), SourceKind::kDefault);  // relative steps: no rate given
  EXPECT_EQ(def.beta1, 0.0);
  EXPECT_EQ(def.eps1, 1e-30);
  EXPECT_EQ(def.eps2, 1e-3);
  EXPECT_EQ(def.clip_threshold, 1.0);
  EXPECT_EQ(def.decay_rate, -0.8);
  EXPECT_TRUE(def.scale_parameter);
  EXPECT_TRUE(def.relative_step);
  EXPECT_FALSE(def.warmup_init);

  const Applied a = apply(
      R"({"optimizer": {"type": "adafactor", "params": {"lr": 1e-3, "eps": [1e-29, 2e-3], "clip_threshold": 0.5,
          "decay_rate": -0.7, "beta1": 0.9, "weight_decay": 0.01, "scale_parameter": false,
          "relative_step": false, "warmup_init": false}}})");
  const optim::AdafactorConfig& o = a.config.engine.optimizer.adafactor;
  EXPECT_EQ(a.config.engine.lr_schedule.max_lr, 1e-3);
  EXPECT_EQ(o.eps1, 1e-29);
  EXPECT_EQ(o.eps2, 2e-3);
  EXPECT_EQ(o.clip_threshold, 0.5);
  EXPECT_EQ(o.decay_rate, -0.7);
  EXPECT_EQ(o.beta1, 0.9);
  EXPECT_EQ(o.weight_decay, 0.01);
  EXPECT_FALSE(o.scale_parameter);
  EXPECT_FALSE(o.relative_step);
  EXPECT_TRUE(a.warnings.empty());
  // HF's None for lr and beta1.
  const Applied n = apply(R"({"optimizer": {"type": "Adafactor", "params": {"lr": null, "beta1": null}}})");
  EXPECT_EQ(n.config.source_kind("lr"), SourceKind::kDefault);
  EXPECT_EQ(n.config.engine.optimizer.adafactor.beta1, 0.0);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Adafactor", "params": {"betas": [0.9, 0.99]}}})").find("betas"),
            std::string::npos);
}

TEST(DeepSpeedConfig, BatchRuleIsCheckedOrDerivedOnceRanksAreKnown) {
  Applied derived = apply(R"({"train_batch_size": 48, "train_micro_batch_size_per_gpu": 4})");
  resolve_batch(derived.config, 3);
  EXPECT_EQ(derived.config.engine.grad_accum, 4);  // 48 = 4 x 4 x 3
  resolve_batch(derived.config, 3);                // idempotent
  EXPECT_EQ(derived.config.engine.grad_accum, 4);

  Applied wrong = apply(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                             "gradient_accumulation_steps": 2})");
  EXPECT_THROW(resolve_batch(wrong.config, 2), ConfigError);
  Applied indivisible = apply(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4})");
  EXPECT_THROW(resolve_batch(indivisible.config, 2), ConfigError);
}

TEST(DeepSpeedConfig, BatchDerivationsAreDeepSpeeds) {
  // train_batch_size + gradient_accumulation_steps: the micro-batch is derived (48 / (2 x 2) = 12).
  Applied a = apply(R"({"train_batch_size": 48, "gradient_accumulation_steps": 2})");
  apply_data_defaults(a.config);
  resolve_batch(a.config, 2);
  EXPECT_EQ(a.config.micro_batch, 12);
  EXPECT_EQ(a.config.engine.grad_accum, 2);
  EXPECT_NE(a.config.source_of("micro-batch").find("derived"), std::string::npos);
  // train_batch_size alone: accumulation 1, micro-batch 64 / 2 = 32 (not the data's default 8 x 4).
  Applied b = apply(R"({"train_batch_size": 64})");
  b.config.data = "some.txt";
  apply_data_defaults(b.config);
  resolve_batch(b.config, 2);
  EXPECT_EQ(b.config.micro_batch, 32);
  EXPECT_EQ(b.config.engine.grad_accum, 1);
  // Not divisible: refused, naming the numbers.
  Applied c = apply(R"({"train_batch_size": 50, "gradient_accumulation_steps": 4})");
  apply_data_defaults(c.config);
  EXPECT_THROW(resolve_batch(c.config, 2), ConfigError);
}

TEST(DeepSpeedConfig, DefaultsAreDeepSpeedsWhenAConfigIsGiven) {
  // No zero_optimization, no precision section: stage 0 in fp32, as DeepSpeed.
  const TrainConfig c = apply(R"({"train_micro_batch_size_per_gpu": 4})").config;
  EXPECT_EQ(c.engine.stage, Stage::k0);
  EXPECT_EQ(c.engine.dtype, Dtype::fp32());
  EXPECT_EQ(c.engine.clip_norm, 0.0);
  EXPECT_EQ(c.engine.lr_schedule.kind, optim::LrScheduleKind::kConstant);
  EXPECT_EQ(c.engine.lr_schedule.max_lr, 1e-3);
  EXPECT_EQ(c.log_every, 10);
  EXPECT_EQ(c.source_of("stage"), "DeepSpeed default");
  // A WarmupLR section without params: DeepSpeed's 1000 log warm-up steps to 0.001.
  const TrainConfig w = apply(R"({"scheduler": {"type": "WarmupLR"}})").config;
  EXPECT_EQ(w.engine.lr_schedule.warmup_steps, 1000);
  EXPECT_EQ(w.engine.lr_schedule.warmup_type, optim::WarmupType::kLog);
  EXPECT_EQ(w.engine.lr_schedule.max_lr, 0.001);
  // Without a config file, zerodp's own defaults stay.
  EXPECT_EQ(TrainConfig{}.engine.stage, Stage::k3);
}

TEST(DeepSpeedConfig, ActivationCheckpointingSectionTurnsItOn) {
  const Applied a = apply(R"({"activation_checkpointing": {"partition_activations": false}})");
  EXPECT_TRUE(a.config.activation_checkpointing);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("activation_checkpointing.partition_activations"), std::string::npos);
  EXPECT_TRUE(apply(R"({"activation_checkpointing": {}})").warnings.empty());
}

TEST(DeepSpeedConfig, DeepSpeedKeysThatDoNothingHereAreWarnedAbout) {
  const Applied a = apply(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},
                              "wall_clock_breakdown": false})");
  ASSERT_EQ(a.warnings.size(), 2u);
  EXPECT_NE(a.warnings[0].find("zero_optimization.offload_optimizer.device"), std::string::npos) << a.warnings[0];
  EXPECT_NE(a.warnings[0].find("host memory already"), std::string::npos) << a.warnings[0];
  EXPECT_NE(a.warnings[1].find("wall_clock_breakdown"), std::string::npos) << a.warnings[1];
}

// ZeRO-Infinity's offload_optimizer with "device": "nvme" is
// --offload-optimizer nvme_path; its tuning keys are warned about; the
// device must be one DeepSpeed knows and nvme needs its path.
TEST(DeepSpeedConfig, OffloadOptimizerToNvmeIsOffloadOptimizer) {
  const Applied a = apply(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme",
                              "nvme_path": "/local_nvme", "pin_memory": true}}})");
  EXPECT_EQ(a.config.engine.offload_optimizer_dir, "/local_nvme");
  EXPECT_EQ(a.config.source_of("offload-optimizer"), "config zero_optimization.offload_optimizer.nvme_path");
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("offload_optimizer.pin_memory"), std::string::npos) << a.warnings[0];
  EXPECT_TRUE(apply(R"({"zero_optimization": {"offload_optimizer": {"device": "none"}}})")
                  .config.engine.offload_optimizer_dir.empty());
  EXPECT_NE(error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})").find("needs nvme_path"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "disk"}}})").find("must be none, cpu or nvme"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "/x",
                        "speed": 1}}})")
                .find("unknown key 'zero_optimization.offload_optimizer.speed'"),
            std::string::npos);
}

// offload_param with "device": "nvme" is --offload-params nvme_path, by
// the same rules; "cpu" is host memory already.
TEST(DeepSpeedConfig, OffloadParamToNvmeIsOffloadParams) {
  const Applied a = apply(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme",
                              "nvme_path": "/local_nvme", "buffer_size": 1e8}}})");
  EXPECT_EQ(a.config.engine.offload_params_dir, "/local_nvme");
  EXPECT_TRUE(a.config.engine.offload_optimizer_dir.empty());
  EXPECT_EQ(a.config.source_of("offload-params"), "config zero_optimization.offload_param.nvme_path");
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("offload_param.buffer_size"), std::string::npos) << a.warnings[0];
  const Applied cpu = apply(R"({"zero_optimization": {"offload_param": {"device": "cpu"}}})");
  EXPECT_TRUE(cpu.config.engine.offload_params_dir.empty());
  ASSERT_EQ(cpu.warnings.size(), 1u);
  EXPECT_NE(cpu.warnings[0].find("parameters in host memory already"), std::string::npos) << cpu.warnings[0];
  EXPECT_NE(error_of(R"({"zero_optimization": {"offload_param": {"device": "nvme"}}})").find("--offload-params DIR"),
            std::string::npos);
}

// DeepSpeed's pipeline section: stages is --pipeline-stages; the partition
// method and the other keys are named as ignored.
TEST(DeepSpeedConfig, PipelineStagesAreThePipelineStages) {
  const Applied a = apply(R"({"pipeline": {"stages": 2, "partition": "parameters", "seed_layers": false}})");
  EXPECT_EQ(a.config.pipeline_stages, 2);
  EXPECT_EQ(a.config.source_of("pipeline-stages"), "config pipeline.stages");
  ASSERT_EQ(a.warnings.size(), 2u);  // partition, seed_layers
  EXPECT_NE(a.warnings[0].find("pipeline.partition"), std::string::npos) << a.warnings[0];
  EXPECT_NE(error_of(R"({"pipeline": {"stages": "auto"}})").find("pipeline.stages"), std::string::npos);
  EXPECT_NE(error_of(R"({"pipeline": {"stages": 0}})").find("pipeline.stages"), std::string::npos);
  EXPECT_NE(error_of(R"({"pipeline": {"stagez": 2}})").find("stagez"), std::string::npos);
}

// MiCS's mics_shard_size and ZeRO++ hpZ's zero_hpz_partition_size are
// hybrid sharding's group size; DeepSpeed's "off" values (-1, 1) keep the
// flat layout; both given must agree.
TEST(DeepSpeedConfig, MicsAndHpzSizesSetTheShardGroup) {
  EXPECT_EQ(apply(R"({"zero_optimization": {"stage": 3, "mics_shard_size": 8}})").config.engine.shard_group_size, 8);
  const Applied hpz = apply(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 4}})");
  EXPECT_EQ(hpz.config.engine.shard_group_size, 4);
  EXPECT_EQ(hpz.config.source_of("shard-group-size"), "config zero_optimization.zero_hpz_partition_size");
  EXPECT_TRUE(hpz.warnings.empty());
  EXPECT_EQ(apply(R"({"zero_optimization": {"mics_shard_size": -1}})").config.engine.shard_group_size, 0);
  EXPECT_EQ(apply(R"({"zero_optimization": {"zero_hpz_partition_size": 1}})").config.engine.shard_group_size, 0);
  EXPECT_EQ(apply(R"({"zero_optimization": {"mics_shard_size": 2, "zero_hpz_partition_size": 2}})")
                .config.engine.shard_group_size,
            2);
  EXPECT_NE(error_of(R"({"zero_optimization": {"mics_shard_size": 2, "zero_hpz_partition_size": 4}})")
                .find("ask for different shard groups"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"zero_optimization": {"mics_shard_size": 0}})").find("zero_optimization.mics_shard_size 0"),
            std::string::npos);
}

TEST(DeepSpeedConfig, BadInputNamesTheProblem) {
  EXPECT_NE(error_of(R"({"train_batch_sise": 8})").find("unknown key 'train_batch_sise'"), std::string::npos);
  EXPECT_NE(error_of(R"({"zero_optimization": {"stagee": 1}})").find("'zero_optimization.stagee'"), std::string::npos);
  EXPECT_NE(error_of(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})").find("both enabled"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"fp16": {"enabled": "yes"}})").find("'fp16.enabled' must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"train_batch_size": 2.5})").find("must be an integer"), std::string::npos);
  // 0 would read as "not given" (the data's default micro-batch).
  EXPECT_NE(error_of(R"({"train_micro_batch_size_per_gpu": 0})").find("train_micro_batch_size_per_gpu must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Lamb"}})")
                .find("'Lamb' is not supported: use Adam, AdamW, SGD, Lion, Adam8bit or Adafactor"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"scheduler": {"type": "OneCycle"}})").find("'OneCycle' is not supported"), std::string::npos);
  EXPECT_NE(error_of("{ not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("must be an object"), std::string::npos);
  // Found by the fuzzer: a number no double holds was a JSON library exception.
  EXPECT_NE(error_of(R"({"train_batch_size": 1e400})").find("cannot be read as JSON"), std::string::npos);
  // Also the fuzzer's: a bucket size no size_t holds was cast with undefined behaviour.
  EXPECT_NE(error_of(R"({"zero_optimization": {"reduce_bucket_size": 5e41}})").find("between 1 and 9e15"),
            std::string::npos);
}

// Hugging Face Trainer's ZeRO-3 config (its documentation's, as written):
// every "auto" is one zerodp derives, from a flag or DeepSpeed's default,
// and the effective configuration names the key beside the value.
TEST(DeepSpeedConfig, HuggingFaceAutoValuesAreDerived) {
  const Applied a = apply(R"({
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "bf16": {"enabled": "auto"},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                      "warmup_num_steps": "auto", "total_num_steps": "auto"}},
    "zero_optimization": {"stage": 3, "overlap_comm": true, "contiguous_gradients": true, "sub_group_size": 1e9,
                          "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                          "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
                          "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": true},
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto", "steps_per_print": 2000,
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "wall_clock_breakdown": false
  })");
  TrainConfig c = a.config;
  EXPECT_EQ(c.engine.stage, Stage::k3);
  EXPECT_EQ(c.engine.dtype, Dtype::fp32());  // both "auto", no --precision: DeepSpeed's off
  EXPECT_EQ(c.engine.lr_schedule.max_lr, 1e-3);
  EXPECT_EQ(c.engine.lr_schedule.warmup_steps, 1000);
  EXPECT_EQ(c.engine.lr_schedule.total_steps, 0);  // the run's --steps
  EXPECT_EQ(c.engine.clip_norm, 0.0);
  EXPECT_EQ(c.train_batch_size, 0);
  EXPECT_EQ(c.micro_batch, 0);
  EXPECT_FALSE(c.grad_accum_given);
  EXPECT_EQ(c.auto_keys.at("micro-batch"), "train_micro_batch_size_per_gpu");
  EXPECT_EQ(c.auto_keys.at("bucket"), "zero_optimization.reduce_bucket_size");
  EXPECT_EQ(c.auto_keys.at("precision"), "bf16.enabled");
  // A flag fills its "auto"; the rest are derived, named as such.
  c.engine.lr_schedule.max_lr = 2e-4;
  c.sources["lr"] = "flag --lr";
  apply_data_defaults(c);
  resolve_batch(c, 2);
  std::map<std::string, std::string> source;
  for (const Setting& s : effective_settings(c, 2)) source[s.name] = s.source;
  EXPECT_EQ(source["lr"], "flag --lr, for \"auto\" scheduler.params.warmup_max_lr in --config");
  EXPECT_EQ(source["micro-batch"],
            "derived: zerodp default for the embedded corpus for \"auto\" train_micro_batch_size_per_gpu");
  EXPECT_EQ(source["betas"], "derived: DeepSpeed default for \"auto\" optimizer.params.betas");
  EXPECT_EQ(source["warmup"], "derived: DeepSpeed default (1000) for \"auto\" scheduler.params.warmup_num_steps");
  EXPECT_EQ(source["clip"], "derived: DeepSpeed default for \"auto\" gradient_clipping");
  EXPECT_NE(source["train-batch-size"].find("for \"auto\" train_batch_size"), std::string::npos);
  const std::string text = format_effective_config(effective_settings(c, 2));
  EXPECT_NE(text.find("grad-accum 1 (DeepSpeed default for \"auto\" gradient_accumulation_steps)"), std::string::npos)
      << text;
  // WarmupLR's "auto" peak is the optimizer's lr when the file gives it (Hugging Face fills both from one flag).
  const TrainConfig w = apply(R"({"optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": "auto"}}})")
                            .config;
  EXPECT_EQ(w.engine.lr_schedule.max_lr, 3e-4);
  EXPECT_EQ(w.source_of("lr"), "derived: optimizer.params.lr");
}

// An "auto" with nothing to derive it from: all of them in one message.
TEST(DeepSpeedConfig, UnderivableAutosAreNamedTogether) {
  const std::string e = error_of(R"({"steps_per_print": "auto", "zero_optimization": {"stage": "auto"},
      "optimizer": {"type": "auto", "params": {"lr": "auto"}}, "train_batch_size": "auto"})");
  EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  EXPECT_NE(e.find("for steps_per_print, zero_optimization.stage, optimizer.type"), std::string::npos) << e;
  EXPECT_EQ(e.find("train_batch_size"), std::string::npos) << e;
  EXPECT_EQ(e.find("optimizer.params.lr"), std::string::npos) << e;
}

// DeepSpeed passes a scheduler's or optimizer's params to its constructor,
// which refuses a keyword of another type; so does zerodp.
TEST(DeepSpeedConfig, AnotherTypesParametersAreRefused) {
  const std::string warmup = error_of(R"({"scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 100}}})");
  EXPECT_NE(warmup.find("test.json: 'scheduler.params.total_num_steps' is not a parameter of scheduler.type "
                        "'WarmupLR': it accepts warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type"),
            std::string::npos)
      << warmup;
  const std::string decay = error_of(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"cos_min_ratio": 0.1}}})");
  EXPECT_NE(decay.find("'scheduler.params.cos_min_ratio' is not a parameter of scheduler.type 'WarmupDecayLR'"),
            std::string::npos)
      << decay;
  EXPECT_NE(error_of(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_min_lr": 0}}})")
                .find("not a parameter of scheduler.type 'WarmupCosineLR'"),
            std::string::npos);
  const std::string lion = error_of(R"({"optimizer": {"type": "Lion", "params": {"momentum": 0.9}}})");
  EXPECT_NE(lion.find("'optimizer.params.momentum' is not a parameter of optimizer.type 'Lion': it accepts lr, "
                      "betas, weight_decay"),
            std::string::npos)
      << lion;
  EXPECT_NE(error_of(R"({"optimizer": {"type": "AdamW", "params": {"momentum": 0.9}}})").find("optimizer.type 'AdamW'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "SGD", "params": {"betas": [0.9, 0.99]}}})").find("'SGD'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"params": {"nesterov": true}}})").find("optimizer.type 'AdamW'"),
            std::string::npos);
  // Each type's own keys still read.
  EXPECT_EQ(apply(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100}}})")
                .config.engine.lr_schedule.total_steps,
            100);
}

TEST(DeepSpeedConfig, AnUnsupportedTypeIsNamedBeforeItsParameters) {
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Lamb", "params": {"max_coeff": 10.0, "lr": 1e-3}}})")
                .find("optimizer.type 'Lamb' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.1}}})")
                .find("scheduler.type 'OneCycle' is not supported"),
            std::string::npos);
}

// Every refusal of a config's content names the file (test.json here).
TEST(DeepSpeedConfig, EveryRefusalNamesTheFile) {
  for (const char* json : {
           R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9]}}})",
           R"({"optimizer": {"type": "Lion", "params": {"betas": 0.9}}})",
           R"({"optimizer": {"type": "Adafactor", "params": {"eps": 1e-30}}})",
           R"({"optimizer": {"type": "Adam8bit", "params": {"min_8bit_size": -1}}})",
           R"({"optimizer": {"type": "Adam8bit", "params": {"adam_w_mode": false}}})",
           R"({"optimizer": {"type": "Lamb"}})",
           R"({"scheduler": {"params": {}}})",
           R"({"scheduler": {"type": "OneCycle"}})",
           R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_max_lr": 0.1}}})",
           R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cubic"}}})",
           R"({"zero_optimization": {"stage": 9}})",
           R"({"zero_optimization": {"reduce_bucket_size": 0}})",
           R"({"zero_optimization": {"mics_shard_size": 0}})",
           R"({"zero_optimization": {"mics_shard_size": 2, "zero_hpz_partition_size": 4}})",
           R"({"fp16": {"enabled": true, "loss_scale": -1}})",
           R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
           R"({"train_batch_size": 0})",
           R"({"train_batch_size": "x"})",
           R"({"stagee": 1})",
           R"({"zero_optimization": 3})",
           "{ not json",
       }) {
    const std::string e = error_of(json);
    EXPECT_NE(e.find("test.json"), std::string::npos) << json << "\n" << e;
  }
}

// Every key the reader records a source or an "auto" under is a setting's
// row name, so the effective configuration shows where each value came from.
TEST(DeepSpeedConfig, EverySourceNamesASetting) {
  for (const char* file : {
           R"({"train_batch_size": 32, "gradient_accumulation_steps": "auto", "gradient_clipping": 1.0,
               "steps_per_print": 5, "activation_checkpointing": {},
               "zero_optimization": {"stage": 3, "reduce_bucket_size": 1e6, "overlap_comm": true,
                 "stage3_prefetch_bucket_size": 1e6, "zero_quantized_weights": true,
                 "zero_quantized_gradients": true, "mics_shard_size": 2,
                 "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme"},
                 "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}},
               "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12},
               "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": "auto", "eps": 1e-8,
                 "weight_decay": 0.1}},
               "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": 2e-3,
                 "warmup_num_steps": 10, "total_num_steps": "auto", "warmup_type": "linear"}}})",
           R"({"bf16": {"enabled": "auto"}, "optimizer": {"type": "Adafactor", "params": {"lr": null,
                 "eps": [1e-30, 1e-3], "beta1": 0.9, "decay_rate": -0.8, "clip_threshold": 1.0,
                 "scale_parameter": true, "relative_step": true, "warmup_init": true}},
               "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_min_ratio": 0.1,
                 "cos_min_ratio": "auto", "warmup_num_steps": "auto"}}})",
           R"({"optimizer": {"type": "Adam8bit", "params": {"min_8bit_size": 0, "fp32_embedding": false}}})",
           R"({"optimizer": {"type": "SGD", "params": {"momentum": 0.9, "nesterov": true}}})",
       }) {
    const Applied a = apply(file);
    for (const auto& [setting, source] : a.config.sources) {
      EXPECT_NE(find_setting(setting), nullptr) << setting << " <- " << source;
    }
    for (const auto& [setting, key] : a.config.auto_keys) {
      EXPECT_NE(find_setting(setting), nullptr) << setting << " <- " << key;
    }
  }
}

}  // namespace
}  // namespace zerodp::train
