// SPDX-License-Identifier: Apache-2.0
#include "train/ds_config.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "train/ds_config_section.h"
#include "train/settings.h"

namespace zerodp::train {

namespace ds {

// A direct key's value as its row's type reads it (a count at least 1, an
// unsigned at least 0, a pair two numbers).
nlohmann::json row_value(Section& section, const std::string& key, const SettingRow& row) {
  switch (row.type) {
    case ValueType::kBool:
      return section.boolean(key);
    case ValueType::kDouble:
      return section.number(key);
    case ValueType::kString:
      return section.string(key);
    case ValueType::kPair: {
      const json& v = section.at(key);
      ZDP_CHECK(v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number(), ConfigError,
                "[config] {}: {} must be two numbers, e.g. [0.9, 0.999], got {}", section.source(), section.name(key),
                v.dump());
      return v;
    }
    default: {
      const int v = section.integer(key);
      ZDP_CHECK(!row.flag.count || v >= 1, ConfigError, "[config] {}: {} must be >= 1, got {}", section.source(),
                section.name(key), v);
      ZDP_CHECK(v >= 0 || row.type == ValueType::kInt || row.type == ValueType::kInt64, ConfigError,
                "[config] {}: {} {} must be >= 0", section.source(), section.name(key), v);
      return v;
    }
  }
}

// The section's direct keys (settings.h, DsKey): each read as its row's
// value and set through the row, as its flag would be.
void apply_direct_keys(Section& section, TrainConfig& c) {
  for (const SettingRow& row : settings()) {
    const DsKey& ds = row.flag.ds;
    if (!ds.direct || (ds.applies != nullptr && !ds.applies(c))) continue;
    const std::string key(ds.path.substr(ds.path.rfind('.') + 1));  // the whole path when it has no dot
    if (section.name(key) != ds.path) continue;
    if (ds.auto_derived && section.derive(key, c, std::string(row.name))) continue;
    if (!section.has(key)) continue;  // absent, or null: the constructor's None
    const nlohmann::json value = row_value(section, key, row);
    // The source first: a row's own check names the key (TrainConfig::spelled).
    c.sources[std::string(row.name)] = section.from(key);
    row.set(c, value);
  }
}

}  // namespace ds

namespace {

using ds::apply_direct_keys;
using ds::json;
using ds::Section;

// ZeRO-Infinity's offload, of the optimizer's states (offload_optimizer:
// --offload-optimizer) or of the parameters (offload_param: --offload-params):
// "nvme" keeps them under nvme_path; "cpu" is where zerodp keeps them anyway
// (host memory), and "none" is off. `row` names the setting, `dir` its value.
void apply_offload(Section o, TrainConfig& c, const char* row, std::string& dir, const char* what) {
  const std::string device = o.has("device") ? o.string("device") : "none";
  ZDP_CHECK(device == "none" || device == "cpu" || device == "nvme", ConfigError,
            "[config] {}: {} '{}' must be none, cpu or nvme", o.source(), o.name("device"), device);
  if (device == "nvme") {
    ZDP_CHECK(o.has("nvme_path"), ConfigError,
              "[config] {}: {} nvme needs nvme_path, the directory for the {} (or use --{} DIR)", o.source(),
              o.name("device"), what, row);
    dir = o.string("nvme_path");
    c.sources[row] = o.from("nvme_path");
  } else {
    o.ignore({"nvme_path"}, "only \"device\": \"nvme\" reads it");
  }
  if (device == "cpu") {
    const std::string why = fmt::format("zerodp keeps the {} in host memory already", what);
    o.ignore({"device"}, why.c_str());
  }
  o.ignore({"pin_memory", "buffer_count", "buffer_size", "max_in_cpu", "fast_init", "ratio", "pipeline",
            "pipeline_read", "pipeline_write"},
           "zerodp streams them through its own staging buffers, reading ahead and writing behind");
  o.finish();
}

void apply_zero(Section z, TrainConfig& c) {
  if (z.has("stage")) {
    c.sources["stage"] = z.from("stage");
    c.engine.stage = parse_stage(z.integer("stage"), fmt::format("[config] {}: zero_optimization.stage", z.source()));
  }
  // Hugging Face fills these two from the model's hidden size; they change
  // the speed, never the bits, and zerodp keeps its own for "auto".
  if (!z.derive("reduce_bucket_size", c, "bucket") && z.has("reduce_bucket_size")) {
    c.sources["bucket"] = z.from("reduce_bucket_size");
    const double v = z.number("reduce_bucket_size");
    ZDP_CHECK(v >= 1 && v <= 9.0e15, ConfigError,
              "[config] {}: zero_optimization.reduce_bucket_size {} must be between 1 and 9e15 elements", z.source(),
              v);
    c.engine.bucket_elements = static_cast<size_t>(v);
  }
  if (z.has("overlap_comm")) {
    c.engine.overlap = z.boolean("overlap_comm");
    c.sources["overlap"] = z.from("overlap_comm");
  }
  if (!z.derive("stage3_prefetch_bucket_size", c, "prefetch") && z.has("stage3_prefetch_bucket_size")) {
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
              "[config] {}: zero_optimization.{} {} must be {} (off) or a group size of at least 1 that divides the "
              "ranks",
              z.source(), key, v, off);
    const int g = v == off ? 0 : static_cast<int>(v);
    ZDP_CHECK(!group || *group == g, ConfigError,
              "[config] {}: zero_optimization.{} {} and {} {} ask for different shard groups: give one of them",
              z.source(), key, v, group_key, *group == 0 ? off : *group);
    group = g;
    group_key = std::string("zero_optimization.") + key;
    c.sources["shard-group-size"] = z.from(key);
  };
  read_group("mics_shard_size", -1);
  read_group("zero_hpz_partition_size", 1);
  if (group) c.engine.shard_group_size = *group;
  if (z.has("offload_optimizer")) {
    apply_offload(z.section("offload_optimizer"), c, "offload-optimizer", c.engine.offload_optimizer_dir,
                  "optimizer states");
  }
  if (z.has("offload_param")) {
    apply_offload(z.section("offload_param"), c, "offload-params", c.engine.offload_params_dir, "parameters");
  }
  z.ignore({"cpu_offload", "cpu_offload_params", "cpu_offload_use_pin_memory"},
           "zerodp keeps every state in host memory already");
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
  // "auto" (Hugging Face: its --fp16): on with --precision fp16, else DeepSpeed's off.
  fp16 = !f.derive("enabled", c, "precision") && f.has("enabled") && f.boolean("enabled");
  auto& s = c.engine.loss_scaler;
  for (const char* key : {"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"}) {
    if (f.has(key)) c.sources["loss-scale"] = f.from(key);
  }
  if (f.has("loss_scale")) {
    const double v = f.number("loss_scale");
    ZDP_CHECK(v >= 0, ConfigError, "[config] {}: fp16.loss_scale {} must be >= 0 (0 = dynamic)", f.source(), v);
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

// pipeline.stages is --pipeline-stages; the cut is the planner's (or
// --pipeline-cut) and the messages are the schedule's own.
void apply_pipeline(Section p, TrainConfig& c) {
  apply_direct_keys(p, c);
  p.ignore({"partition", "seed_layers", "pipe_partitioned", "grad_partitioned"},
           "zerodp cuts by the planner's FLOPs (or --pipeline-cut) and sends the residual stream whole");
  p.ignore({"activation_checkpoint_interval"}, "use activation_checkpointing or --activation-checkpointing");
  p.finish();
}

// The batch: the direct keys, and train_batch_size, which decides the others
// by DeepSpeed's batch rule once the ranks are known (resolve_batch);
// Hugging Face's "auto" in it is derived there too.
void apply_batch(Section& top, TrainConfig& c, std::string_view source) {
  if (!top.derive("train_batch_size", c, "train-batch-size") && top.has("train_batch_size")) {
    c.train_batch_size = top.integer("train_batch_size");
    c.sources["train-batch-size"] = top.from("train_batch_size");
    ZDP_CHECK(c.train_batch_size >= 1, ConfigError, "[config] {}: train_batch_size must be >= 1", source);
  }
  apply_direct_keys(top, c);
}

// fp16 or bf16 (or bfloat16): at most one enabled.
void apply_precision(Section& top, TrainConfig& c, std::string_view source) {
  bool fp16 = false, bf16 = false;
  if (top.has("fp16")) apply_fp16(top.section("fp16"), c, fp16);
  for (const char* key : {"bf16", "bfloat16"}) {
    if (top.has(key)) {
      Section b = top.section(key);
      bf16 = bf16 || (!b.derive("enabled", c, "precision") && b.has("enabled") && b.boolean("enabled"));
      b.ignore({"immediate_grad_update", "check_grad_overflow"}, "not needed here");
      b.finish();
    }
  }
  ZDP_CHECK(!(fp16 && bf16), ConfigError, "[config] {}: fp16 and bf16 are both enabled: enable one of them", source);
  if (fp16) c.engine.dtype = Dtype::fp16();
  if (bf16) c.engine.dtype = Dtype::bf16();
  if (fp16) c.sources["precision"] = top.from("fp16.enabled");
  if (bf16) c.sources["precision"] = top.from(top.has("bf16") ? "bf16.enabled" : "bfloat16.enabled");
}

// Sections and keys of DeepSpeed that zerodp does not implement: warned about, not refused.
void ignore_unimplemented(Section& top) {
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
              "seq_parallel_communication_data_type",
              "disable_allgather"},
             "not implemented by zerodp");
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
  // DeepSpeed's Lion (FusedLion, DeepSpeedCPULion) has Adam's defaults too:
  // lr 1e-3, betas (0.9, 0.999), not the paper's (0.9, 0.99).
  opt.adam.beta1 = opt.lion.beta1 = 0.9;
  opt.adam.beta2 = opt.lion.beta2 = 0.999;
  opt.adam.eps = 1e-8;
  opt.adam.weight_decay = opt.sgd.weight_decay = opt.lion.weight_decay = 0.0;
  c.engine.lr_schedule = optim::LrScheduleConfig{};  // no scheduler: the optimizer's lr throughout
  c.engine.lr_schedule.kind = optim::LrScheduleKind::kConstant;
  c.engine.lr_schedule.max_lr = 1e-3;  // DeepSpeed's Adam (and Lion) lr
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
  std::vector<std::string> autos;  // keys holding an "auto" nothing derives
  Section top(root, "", source, warn, autos);
  apply_deepspeed_defaults(c);
  apply_batch(top, c, source);
  if (top.has("activation_checkpointing")) apply_activation_checkpointing(top.section("activation_checkpointing"), c);
  if (top.has("zero_optimization")) apply_zero(top.section("zero_optimization"), c);
  if (top.has("pipeline")) apply_pipeline(top.section("pipeline"), c);
  apply_precision(top, c, source);
  if (top.has("optimizer")) ds::apply_optimizer(top.section("optimizer"), c);
  if (top.has("scheduler")) ds::apply_scheduler(top.section("scheduler"), c);
  ignore_unimplemented(top);
  top.finish();
  ZDP_CHECK(autos.empty(), ConfigError,
            "[config] {}: \"auto\" has no value zerodp can derive for {}: give values (\"auto\" is derived for the "
            "batch sizes, accumulation, clipping, fp16/bf16.enabled, the optimizer's lr, betas, eps and "
            "weight_decay, the scheduler's warm-up and step counts and rates, and the bucket sizes)",
            source, fmt::join(autos, ", "));
}

void apply_deepspeed_config_file(const std::string& path, TrainConfig& c) {
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(in.good(), ConfigError, "[config] {}: cannot be read: check the path", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  apply_deepspeed_config(ss.str(), path, c, [](const std::string& w) { warn(w); });
}

}  // namespace zerodp::train
