// SPDX-License-Identifier: Apache-2.0
#include "train/ds_config.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"

namespace zerodp::train {
namespace {

using nlohmann::json;

// Reads one section's keys, refusing unknown ones and warning about
// DeepSpeed keys that have no effect here.
class Section {
 public:
  Section(const json& j, std::string path, std::string_view source, const WarningSink& warn)
      : j_(j), path_(std::move(path)), source_(source), warn_(warn) {
    ZDP_CHECK(j.is_object(), ConfigError, "[config] {}: '{}' must be an object", source_, display());
  }

  bool has(const std::string& key) {
    seen_.insert(key);
    return j_.contains(key) && !j_.at(key).is_null();
  }
  const json& at(const std::string& key) const { return j_.at(key); }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // "config KEY.PATH": where a setting came from, for the effective configuration.
  std::string from(const std::string& key) const { return "config " + name(key); }

  double number(const std::string& key) {
    const json& v = at(key);
    ZDP_CHECK(v.is_number(), ConfigError, "[config] {}: '{}' must be a number, got {}", source_, name(key), v.dump());
    return v.get<double>();
  }
  int integer(const std::string& key) {
    const double v = number(key);
    ZDP_CHECK(v == std::floor(v) && std::abs(v) < 2e9, ConfigError, "[config] {}: '{}' must be an integer, got {}",
              source_, name(key), at(key).dump());
    return static_cast<int>(v);
  }
  bool boolean(const std::string& key) {
    const json& v = at(key);
    ZDP_CHECK(v.is_boolean(), ConfigError, "[config] {}: '{}' must be true or false, got {}", source_, name(key),
              v.dump());
    return v.get<bool>();
  }
  std::string string(const std::string& key) {
    const json& v = at(key);
    ZDP_CHECK(v.is_string(), ConfigError, "[config] {}: '{}' must be a string, got {}", source_, name(key), v.dump());
    return v.get<std::string>();
  }
  Section section(const std::string& key) { return Section(at(key), name(key), source_, warn_); }

  // Keys DeepSpeed knows that zerodp ignores: a warning each, when present.
  void ignore(std::initializer_list<const char*> keys, const char* why) {
    for (const char* k : keys) {
      if (has(k)) warn_(fmt::format("{}: DeepSpeed key '{}' has no effect here ({})", source_, name(k), why));
    }
  }
  // Every key not read or ignored is an error.
  void finish() const {
    for (const auto& [key, value] : j_.items()) {
      ZDP_CHECK(seen_.count(key) > 0, ConfigError,
                "[config] {}: unknown key '{}': remove it (accepted keys are listed in docs/train.md)", source_,
                name(key));
    }
  }

 private:
  std::string display() const { return path_.empty() ? "(top level)" : path_; }

  const json& j_;
  std::string path_;
  std::string_view source_;
  const WarningSink& warn_;
  std::set<std::string> seen_;
};

void apply_zero(Section z, TrainConfig& c) {
  if (z.has("stage")) {
    c.sources["stage"] = z.from("stage");
    c.engine.stage = parse_stage(z.integer("stage"), "[train] " + c.spelled("stage", "zero_optimization.stage"));
  }
  if (z.has("reduce_bucket_size")) {
    c.sources["bucket"] = z.from("reduce_bucket_size");
    const double v = z.number("reduce_bucket_size");
    ZDP_CHECK(v >= 1 && v <= 9.0e15, ConfigError,
              "[config] zero_optimization.reduce_bucket_size {} must be between 1 and 9e15 elements", v);
    c.engine.bucket_elements = static_cast<size_t>(v);
  }
  if (z.has("overlap_comm")) {
    c.engine.overlap = z.boolean("overlap_comm");
    c.sources["overlap"] = z.from("overlap_comm");
  }
  if (z.has("stage3_prefetch_bucket_size")) {
    c.engine.prefetch = z.number("stage3_prefetch_bucket_size") > 0;
    c.sources["prefetch"] = z.from("stage3_prefetch_bucket_size");
  }
  // ZeRO++'s qwZ and qgZ: int8 blocks on the link (comm/quantize.h).
  if (z.has("zero_quantized_weights")) {
    c.engine.quantize_weights =
        z.boolean("zero_quantized_weights") ? comm::Quantization::kInt8 : comm::Quantization::kNone;
    c.sources["quantize-weights"] = z.from("zero_quantized_weights");
  }
  if (z.has("zero_quantized_gradients")) {
    c.engine.quantize_grads =
        z.boolean("zero_quantized_gradients") ? comm::Quantization::kInt8 : comm::Quantization::kNone;
    c.sources["quantize-grads"] = z.from("zero_quantized_gradients");
  }
  // MiCS's shard size and ZeRO++ hpZ's partition size: hybrid sharding
  // (zero::EngineConfig::shard_group_size; docs/scale.md says how hpZ
  // differs). mics_shard_size -1 and hpZ 1 are DeepSpeed's "off".
  std::optional<int> group;
  std::string group_key;
  auto read_group = [&](const char* key, int off) {
    if (!z.has(key)) return;
    const int64_t v = z.integer(key);
    ZDP_CHECK(v == off || (v >= 1 && v <= 1 << 20), ConfigError,
              "[config] zero_optimization.{} {} must be {} (off) or a group size of at least 1 that divides the ranks",
              key, v, off);
    const int g = v == off ? 0 : static_cast<int>(v);
    ZDP_CHECK(!group || *group == g, ConfigError,
              "[config] zero_optimization.{} {} and {} {} ask for different shard groups: give one of them", key, v,
              group_key, *group == 0 ? off : *group);
    group = g;
    group_key = std::string("zero_optimization.") + key;
    c.sources["shard-group-size"] = z.from(key);
  };
  read_group("mics_shard_size", -1);
  read_group("zero_hpz_partition_size", 1);
  if (group) c.engine.shard_group_size = *group;
  z.ignore({"offload_optimizer", "offload_param", "cpu_offload", "cpu_offload_params", "cpu_offload_use_pin_memory"},
           "zerodp keeps every state in host memory already; there is no offload");
  z.ignore({"allgather_partitions", "allgather_bucket_size", "reduce_scatter", "contiguous_gradients",
            "round_robin_gradients", "stage3_max_live_parameters", "stage3_max_reuse_distance",
            "stage3_param_persistence_threshold", "stage3_gather_16bit_weights_on_model_save",
            "stage3_gather_fp16_weights_on_model_save", "sub_group_size", "elastic_checkpoint",
            "load_from_fp32_weights", "ignore_unused_parameters", "legacy_stage1", "memory_efficient_linear",
            "use_multi_rank_bucket_allreduce", "mics_hierarchical_params_gather"},
           "zerodp's per-unit schedule decides this");
  z.finish();
}

void apply_fp16(Section f, TrainConfig& c, bool& fp16) {
  fp16 = f.has("enabled") && f.boolean("enabled");
  auto& s = c.engine.loss_scaler;
  for (const char* key : {"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"}) {
    if (f.has(key)) c.sources["loss-scale"] = f.from(key);
  }
  if (f.has("loss_scale")) {
    const double v = f.number("loss_scale");
    ZDP_CHECK(v >= 0, ConfigError, "[config] fp16.loss_scale {} must be >= 0 (0 = dynamic)", v);
    if (v > 0) {
      s.mode = optim::LossScaleMode::kStatic;
      s.initial_scale = v;
    }
  }
  if (f.has("initial_scale_power")) s.initial_scale = std::ldexp(1.0, f.integer("initial_scale_power"));
  if (f.has("loss_scale_window")) s.window = f.integer("loss_scale_window");
  if (f.has("hysteresis")) s.hysteresis = f.integer("hysteresis");
  if (f.has("min_loss_scale")) s.min_scale = f.number("min_loss_scale");
  if (f.has("consecutive_hysteresis")) s.consecutive_hysteresis = f.boolean("consecutive_hysteresis");
  f.ignore({"auto_cast", "fp16_master_weights_and_grads"}, "zerodp always keeps fp32 master weights");
  f.finish();
}

// DeepSpeed has no Adafactor; "Adafactor" takes Hugging Face transformers'
// Adafactor's parameter names and defaults (optim::AdafactorConfig).
void apply_adafactor(Section& o, TrainConfig& c) {
  optim::AdafactorConfig& a = c.engine.optimizer.adafactor;
  a = optim::AdafactorConfig{};
  if (o.has("params")) {
    Section p = o.section("params");
    if (p.has("lr")) {  // null: HF's None
      a.lr = p.number("lr");
      c.engine.lr_schedule.max_lr = a.lr;
      c.sources["lr"] = p.from("lr");
    }
    if (p.has("eps")) {
      c.sources["adafactor-eps"] = p.from("eps");
      const json& e = p.at("eps");
      ZDP_CHECK(e.is_array() && e.size() == 2 && e[0].is_number() && e[1].is_number(), ConfigError,
                "[config] optimizer.params.eps of Adafactor must be two numbers [eps1, eps2], e.g. [1e-30, 1e-3], "
                "got {}",
                e.dump());
      a.eps1 = e[0].get<double>();
      a.eps2 = e[1].get<double>();
    }
    if (p.has("beta1")) {  // null: HF's None, no first moment
      a.beta1 = p.number("beta1");
      c.sources["beta1"] = p.from("beta1");
    }
    auto number = [&](const char* key, const char* setting, double& out) {
      if (!p.has(key)) return;
      out = p.number(key);
      c.sources[setting] = p.from(key);
    };
    auto boolean = [&](const char* key, const char* setting, bool& out) {
      if (!p.has(key)) return;
      out = p.boolean(key);
      c.sources[setting] = p.from(key);
    };
    number("clip_threshold", "clip-threshold", a.clip_threshold);
    number("decay_rate", "decay-rate", a.decay_rate);
    number("weight_decay", "weight-decay", a.weight_decay);
    boolean("scale_parameter", "scale-parameter", a.scale_parameter);
    boolean("relative_step", "relative-step", a.relative_step);
    boolean("warmup_init", "warmup-init", a.warmup_init);
    p.finish();
  }
  c.engine.optimizer.kind = optim::OptimizerKind::kAdafactor;
  c.sources["optimizer"] = o.from("type");
  o.finish();
}

void apply_optimizer(Section o, TrainConfig& c) {
  std::string type = o.has("type") ? o.string("type") : "AdamW";
  std::string lower;
  for (char ch : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto& opt = c.engine.optimizer;
  if (lower == "adafactor") return apply_adafactor(o, c);
  bool adam_w_mode = true;  // DeepSpeed's "Adam" is AdamW unless adam_w_mode is false
  bool adam_w_mode_given = false;
  if (o.has("params")) {
    Section p = o.section("params");
    if (p.has("adam_w_mode")) {
      adam_w_mode = p.boolean("adam_w_mode");
      adam_w_mode_given = true;
    }
    if (p.has("lr")) {
      opt.adam.lr = opt.sgd.lr = opt.lion.lr = p.number("lr");
      c.engine.lr_schedule.max_lr = opt.adam.lr;
      c.sources["lr"] = p.from("lr");
    }
    if (p.has("betas")) {
      c.sources["betas"] = p.from("betas");
      const json& b = p.at("betas");
      ZDP_CHECK(b.is_array() && b.size() == 2 && b[0].is_number() && b[1].is_number(), ConfigError,
                "[config] optimizer.params.betas must be two numbers, got {}", b.dump());
      opt.adam.beta1 = opt.lion.beta1 = b[0].get<double>();
      opt.adam.beta2 = opt.lion.beta2 = b[1].get<double>();
    }
    if (p.has("eps")) {
      opt.adam.eps = p.number("eps");
      c.sources["eps"] = p.from("eps");
    }
    if (p.has("weight_decay")) {
      opt.adam.weight_decay = opt.sgd.weight_decay = opt.lion.weight_decay = p.number("weight_decay");
      c.sources["weight-decay"] = p.from("weight_decay");
    }
    if (p.has("momentum")) {
      opt.sgd.momentum = p.number("momentum");
      c.sources["momentum"] = p.from("momentum");
    }
    if (p.has("nesterov")) opt.sgd.nesterov = p.boolean("nesterov");
    if (lower == "adam8bit" || lower == "adamw8bit") {
      // Which units keep fp32 moments: bitsandbytes' constructor argument
      // min_8bit_size (per unit here), and zerodp's fp32_embedding (what
      // bitsandbytes does with a module override or StableEmbedding).
      if (p.has("min_8bit_size")) {
        const int size = p.integer("min_8bit_size");
        ZDP_CHECK(size >= 0, ConfigError,
                  "[config] optimizer.params.min_8bit_size {} must be >= 0 (0: every unit 8-bit)", size);
        opt.adam.min_8bit_size = static_cast<uint64_t>(size);
        c.sources["adam8bit-min-8bit-size"] = p.from("min_8bit_size");
      }
      if (p.has("fp32_embedding")) {
        opt.adam.fp32_embedding = p.boolean("fp32_embedding");
        c.sources["adam8bit-fp32-embedding"] = p.from("fp32_embedding");
      }
    }
    p.ignore({"torch_adam", "amsgrad", "bias_correction", "fused", "dampening"}, "not supported; the default is used");
    p.finish();
  }
  c.sources["optimizer"] = o.has("type") ? o.from("type") : "DeepSpeed default (AdamW)";
  if (lower == "adam") {
    opt.kind = adam_w_mode ? optim::OptimizerKind::kAdamW : optim::OptimizerKind::kAdam;
  } else if (lower == "adamw") {
    opt.kind = optim::OptimizerKind::kAdamW;
  } else if (lower == "sgd") {
    opt.kind = optim::OptimizerKind::kSgd;
  } else if (lower == "lion") {
    opt.kind = optim::OptimizerKind::kLion;
  } else if (lower == "adam8bit" || lower == "adamw8bit") {
    // bitsandbytes' class names (bnb.optim.Adam8bit / AdamW8bit): both decay
    // decoupled in bitsandbytes' 8-bit kernels, and so does zerodp's.
    ZDP_CHECK(adam_w_mode || !adam_w_mode_given, ConfigError,
              "[config] optimizer.type '{}' decays decoupled (as AdamW); remove adam_w_mode: false", type);
    opt.kind = optim::OptimizerKind::kAdam8bit;
  } else {
    ZDP_THROW(ConfigError,
              "[config] optimizer.type '{}' is not supported: use Adam, AdamW, SGD, Lion, Adam8bit or Adafactor", type);
  }
  o.finish();
}

void apply_scheduler(Section s, TrainConfig& c) {
  ZDP_CHECK(s.has("type"), ConfigError, "[config] scheduler needs a 'type': WarmupLR, WarmupDecayLR or WarmupCosineLR");
  const std::string type = s.string("type");
  c.sources["schedule"] = s.from("type");
  auto& lr = c.engine.lr_schedule;
  // DeepSpeed's defaults (deepspeed/runtime/lr_schedules.py). WarmupLR and
  // WarmupDecayLR set the rate themselves (warmup_max_lr, default 0.001);
  // WarmupCosineLR scales the optimizer's lr.
  lr.warmup_steps = 1000;
  lr.warmup_type = optim::WarmupType::kLog;
  lr.min_lr = 0.0;
  lr.warmup_min_ratio = 0.0;
  lr.cos_min_ratio = 0.0001;
  lr.total_steps = 0;  // DeepSpeed requires total_num_steps for the decaying ones; zerodp uses --steps
  if (type != "WarmupCosineLR") {
    lr.max_lr = 0.001;
    c.sources["lr"] = fmt::format("DeepSpeed default for {} (warmup_max_lr 0.001)", type);
  }
  if (type == "WarmupLR") {
    lr.kind = optim::LrScheduleKind::kWarmup;
  } else if (type == "WarmupDecayLR") {
    lr.kind = optim::LrScheduleKind::kWarmupLinearDecay;
  } else if (type == "WarmupCosineLR") {
    lr.kind = optim::LrScheduleKind::kWarmupCosine;
  } else {
    ZDP_THROW(ConfigError,
              "[config] scheduler.type '{}' is not supported: use WarmupLR, WarmupDecayLR or WarmupCosineLR", type);
  }
  if (s.has("params")) {
    Section p = s.section("params");
    if (p.has("warmup_min_lr")) lr.min_lr = p.number("warmup_min_lr");
    if (p.has("warmup_max_lr")) {
      ZDP_CHECK(type != "WarmupCosineLR", ConfigError,
                "[config] scheduler.params.warmup_max_lr is not a WarmupCosineLR parameter: its peak is "
                "optimizer.params.lr");
      lr.max_lr = p.number("warmup_max_lr");
      c.sources["lr"] = p.from("warmup_max_lr");
    }
    if (p.has("warmup_num_steps")) lr.warmup_steps = p.integer("warmup_num_steps");
    c.sources["warmup"] = p.has("warmup_num_steps") ? p.from("warmup_num_steps") : "DeepSpeed default (1000)";
    if (p.has("total_num_steps")) lr.total_steps = p.integer("total_num_steps");
    if (p.has("warmup_type")) lr.warmup_type = optim::parse_warmup_type(p.string("warmup_type"));
    if (p.has("warmup_min_ratio")) lr.warmup_min_ratio = p.number("warmup_min_ratio");
    if (p.has("cos_min_ratio")) lr.cos_min_ratio = p.number("cos_min_ratio");
    p.ignore({"last_batch_iteration"}, "schedules start at step 0");
    p.finish();
  }
  s.finish();
}

// activation_checkpointing: the section asks for it (DeepSpeed's model code
// then calls its checkpoint function per layer; zerodp checkpoints every
// block). Its tuning keys have no counterpart here.
void apply_activation_checkpointing(Section a, TrainConfig& c) {
  c.activation_checkpointing = true;
  c.sources["activation-checkpointing"] = "config activation_checkpointing (the section is present)";
  a.ignore({"partition_activations", "contiguous_memory_optimization", "cpu_checkpointing", "number_checkpoints",
            "synchronize_checkpoint_boundary", "profile"},
           "zerodp recomputes each block's forward and keeps nothing else");
  a.finish();
}

}  // namespace

void apply_deepspeed_defaults(TrainConfig& c) {
  c.defaults = "DeepSpeed default";
  c.engine.stage = Stage::k0;      // zero_optimization.stage
  c.engine.dtype = Dtype::fp32();  // no fp16/bf16 section enabled
  c.engine.clip_norm = 0.0;        // gradient_clipping
  c.log_every = 10;                // steps_per_print
  auto& opt = c.engine.optimizer;  // no optimizer section: AdamW with DeepSpeed's Adam defaults
  opt.kind = optim::OptimizerKind::kAdamW;
  opt.adam.lr = opt.sgd.lr = opt.lion.lr = 1e-3;
  // DeepSpeed's Lion (FusedLion, DeepSpeedCPULion) has Adam's defaults too:
  // lr 1e-3, betas (0.9, 0.999), not the paper's (0.9, 0.99).
  opt.adam.beta1 = opt.lion.beta1 = 0.9;
  opt.adam.beta2 = opt.lion.beta2 = 0.999;
  opt.adam.eps = 1e-8;
  opt.adam.weight_decay = opt.sgd.weight_decay = opt.lion.weight_decay = 0.0;
  c.engine.lr_schedule = optim::LrScheduleConfig{};  // no scheduler: the optimizer's lr throughout
  c.engine.lr_schedule.kind = optim::LrScheduleKind::kConstant;
  c.engine.lr_schedule.max_lr = opt.adam.lr;
  // Where zerodp keeps its own default (docs/train.md): these change the
  // speed, never the bits.
  c.sources["overlap"] = "zerodp default; DeepSpeed's overlap_comm is off below stage 3: speed only";
  c.sources["bucket"] = "zerodp default; DeepSpeed's reduce_bucket_size is 5e8: speed only";
  c.sources["prefetch"] = "zerodp default; speed only";
}

void apply_deepspeed_config(std::string_view json_text, std::string_view source, TrainConfig& c,
                            const WarningSink& warn) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    ZDP_THROW(ConfigError, "[config] {} is not valid JSON (byte {}): fix the syntax", source, e.byte);
  } catch (const json::exception& e) {
    // e.g. a number too large for a double ("1e400").
    ZDP_THROW(ConfigError, "[config] {} cannot be read as JSON ({}): fix the value", source, e.what());
  }
  Section top(root, "", source, warn);
  apply_deepspeed_defaults(c);
  const bool has_tbs = top.has("train_batch_size");
  const bool has_micro = top.has("train_micro_batch_size_per_gpu");
  const bool has_accum = top.has("gradient_accumulation_steps");
  if (has_tbs) {
    c.train_batch_size = top.integer("train_batch_size");
    c.sources["train-batch-size"] = top.from("train_batch_size");
  }
  if (has_micro) {
    c.micro_batch = top.integer("train_micro_batch_size_per_gpu");
    c.sources["micro-batch"] = top.from("train_micro_batch_size_per_gpu");
  }
  if (has_accum) {
    c.engine.grad_accum = top.integer("gradient_accumulation_steps");
    c.grad_accum_given = true;
    c.sources["grad-accum"] = top.from("gradient_accumulation_steps");
  }
  ZDP_CHECK(!has_tbs || c.train_batch_size >= 1, ConfigError, "[config] {}: train_batch_size must be >= 1", source);
  ZDP_CHECK(!has_micro || c.micro_batch >= 1, ConfigError, "[config] {}: train_micro_batch_size_per_gpu must be >= 1",
            source);
  if (top.has("steps_per_print")) {
    c.log_every = top.integer("steps_per_print");
    c.sources["log-every"] = top.from("steps_per_print");
  }
  if (top.has("gradient_clipping")) {
    c.engine.clip_norm = top.number("gradient_clipping");
    c.sources["clip"] = top.from("gradient_clipping");
  }
  if (top.has("activation_checkpointing")) apply_activation_checkpointing(top.section("activation_checkpointing"), c);
  if (top.has("zero_optimization")) apply_zero(top.section("zero_optimization"), c);
  bool fp16 = false, bf16 = false;
  if (top.has("fp16")) apply_fp16(top.section("fp16"), c, fp16);
  for (const char* key : {"bf16", "bfloat16"}) {
    if (top.has(key)) {
      Section b = top.section(key);
      bf16 = bf16 || (b.has("enabled") && b.boolean("enabled"));
      b.ignore({"immediate_grad_update", "check_grad_overflow"}, "not needed here");
      b.finish();
    }
  }
  ZDP_CHECK(!(fp16 && bf16), ConfigError, "[config] {}: fp16 and bf16 are both enabled: enable one of them", source);
  if (fp16) c.engine.dtype = Dtype::fp16();
  if (bf16) c.engine.dtype = Dtype::bf16();
  if (fp16) c.sources["precision"] = top.from("fp16.enabled");
  if (bf16) c.sources["precision"] = top.from(top.has("bf16") ? "bf16.enabled" : "bfloat16.enabled");
  if (top.has("optimizer")) apply_optimizer(top.section("optimizer"), c);
  if (top.has("scheduler")) apply_scheduler(top.section("scheduler"), c);
  top.ignore({"wall_clock_breakdown",
              "memory_breakdown",
              "dump_state",
              "flops_profiler",
              "tensorboard",
              "wandb",
              "csv_monitor",
              "comet",
              "comms_logger",
              "zero_allow_untested_optimizer",
              "zero_force_ds_cpu_optimizer",
              "prescale_gradients",
              "gradient_predivide_factor",
              "communication_data_type",
              "sparse_gradients",
              "amp",
              "aio",
              "data_efficiency",
              "curriculum_learning",
              "elasticity",
              "sparse_attention",
              "checkpoint",
              "data_types",
              "autotuning",
              "compression_training",
              "pipeline",
              "seq_parallel_communication_data_type",
              "disable_allgather"},
             "not implemented by zerodp");
  top.finish();
}

void apply_deepspeed_config_file(const std::string& path, TrainConfig& c) {
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(in.good(), ConfigError, "[config] cannot read '{}': check the path", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  apply_deepspeed_config(ss.str(), path, c, [](const std::string& w) { warn(w); });
}

}  // namespace zerodp::train
