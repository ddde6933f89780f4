// SPDX-License-Identifier: Apache-2.0
// The optimizer and scheduler sections of a DeepSpeed config. The type is
// read first: a type zerodp lacks is named before any of its parameters.
// Each type takes the parameters its DeepSpeed (or PyTorch, bitsandbytes,
// Hugging Face) constructor takes, no others: DeepSpeed refuses a keyword
// another type takes, and so does zerodp, naming the type and its keys.
#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "train/ds_config_section.h"
#include "train/settings.h"

namespace zerodp::train::ds {
namespace {

std::string lowercase(const std::string& s) {
  std::string out;
  for (char ch : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The parameters optimizer.type takes (DeepSpeed's FusedAdam /
// DeepSpeedCPUAdam, torch.optim.SGD, FusedLion, bitsandbytes' 8-bit Adam;
// DeepSpeed has no Adafactor: Hugging Face transformers' Adafactor's names
// and defaults, optim::AdafactorConfig); an unsupported type is refused
// first, named.
std::vector<std::string> accepted_params(const std::string& lower, const std::string& type, std::string_view source) {
  if (lower == "adam" || lower == "adamw") {
    return {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "bias_correction", "amsgrad", "torch_adam", "fused"};
  }
  if (lower == "sgd") return {"lr", "momentum", "weight_decay", "nesterov", "dampening"};
  if (lower == "lion") return {"lr", "betas", "weight_decay"};
  if (lower == "adam8bit" || lower == "adamw8bit") {
    return {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "min_8bit_size", "fp32_embedding"};
  }
  if (lower == "adafactor") {
    return {"lr",         "eps",          "clip_threshold",  "decay_rate",
            "beta1",      "weight_decay", "scale_parameter", "relative_step",
            "warmup_init"};
  }
  ZDP_THROW(ConfigError,
            "[config] {}: optimizer.type '{}' is not supported: use Adam, AdamW, SGD, Lion, Adam8bit or Adafactor",
            source, type);
}

// The optimizer's kind: DeepSpeed's "Adam" is AdamW unless adam_w_mode is
// false; bitsandbytes' class names (bnb.optim.Adam8bit / AdamW8bit) both
// decay decoupled in its 8-bit kernels, and so does zerodp's.
optim::OptimizerKind optimizer_kind(const std::string& lower, const std::string& type, std::optional<bool> adam_w_mode,
                                    std::string_view source) {
  if (lower == "adam") return adam_w_mode.value_or(true) ? optim::OptimizerKind::kAdamW : optim::OptimizerKind::kAdam;
  if (lower == "adamw") return optim::OptimizerKind::kAdamW;
  if (lower == "sgd") return optim::OptimizerKind::kSgd;
  if (lower == "lion") return optim::OptimizerKind::kLion;
  if (lower == "adafactor") return optim::OptimizerKind::kAdafactor;
  ZDP_CHECK(adam_w_mode.value_or(true), ConfigError,
            "[config] {}: optimizer.type '{}' decays decoupled (as AdamW); remove adam_w_mode: false", source, type);
  return optim::OptimizerKind::kAdam8bit;
}

}  // namespace

// The type first (an unsupported one named), then the parameters it takes:
// each setting's key is read through its row (settings_optim.cc), with
// Hugging Face Trainer's "auto" derived for lr, betas, eps and
// weight_decay, and a null (Python's None) read as absent.
void apply_optimizer(Section o, TrainConfig& c) {
  const std::string type = o.has("type") ? o.string("type") : "AdamW";
  const std::string lower = lowercase(type);
  auto& opt = c.engine.optimizer;
  const std::vector<std::string> accepted = accepted_params(lower, type, o.source());
  std::optional<bool> adam_w_mode;
  std::optional<Section> params;
  if (o.has("params")) {
    params.emplace(o.section("params"));
    params->only(accepted, "optimizer.type '" + type + "'");
    if (params->has("adam_w_mode")) adam_w_mode = params->boolean("adam_w_mode");
  }
  opt.kind = optimizer_kind(lower, type, adam_w_mode, o.source());
  // Adafactor's parameters start from Hugging Face's defaults.
  if (opt.kind == optim::OptimizerKind::kAdafactor) opt.adafactor = optim::AdafactorConfig{};
  c.sources["optimizer"] = o.has("type") ? o.from("type") : "DeepSpeed default (AdamW)";
  if (params) {
    Section& p = *params;
    apply_direct_keys(p, c);
    if (p.has("nesterov")) opt.sgd.nesterov = p.boolean("nesterov");
    p.ignore({"torch_adam", "amsgrad", "bias_correction", "fused", "dampening"}, "not supported; the default is used");
    p.finish();
  }
  o.finish();
}

namespace {

// A scheduler.type's kind and the parameters its constructor in
// deepspeed/runtime/lr_schedules.py takes; an unsupported type is refused.
struct ScheduleParams {
  optim::LrScheduleKind kind;
  std::vector<std::string> params;
};
ScheduleParams schedule_kind(const std::string& type, std::string_view source) {
  if (type == "WarmupLR") {
    return {optim::LrScheduleKind::kWarmup,
            {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"}};
  }
  if (type == "WarmupDecayLR") {
    return {optim::LrScheduleKind::kWarmupLinearDecay,
            {"total_num_steps", "warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
             "last_batch_iteration"}};
  }
  if (type == "WarmupCosineLR") {
    return {optim::LrScheduleKind::kWarmupCosine,
            {"total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type",
             "last_batch_iteration"}};
  }
  ZDP_THROW(ConfigError,
            "[config] {}: scheduler.type '{}' is not supported: use WarmupLR, WarmupDecayLR or WarmupCosineLR", source,
            type);
}

// scheduler.params: only the type's own; "auto" derived where it can be.
void apply_scheduler_params(Section p, TrainConfig& c, const std::string& type,
                            const std::vector<std::string>& accepted, bool optimizer_lr_given, double optimizer_lr) {
  auto& lr = c.engine.lr_schedule;
  ZDP_CHECK(type != "WarmupCosineLR" || !p.has("warmup_max_lr"), ConfigError,
            "[config] {}: scheduler.params.warmup_max_lr is not a parameter of WarmupCosineLR: its peak is "
            "optimizer.params.lr",
            p.source());
  p.only(accepted, "scheduler.type '" + type + "'");
  if (p.derive("warmup_max_lr", c, kLrSetting, optimizer_lr_given ? "optimizer.params.lr" : "")) {
    if (optimizer_lr_given) lr.max_lr = optimizer_lr;
  } else if (p.has("warmup_max_lr")) {
    lr.max_lr = p.number("warmup_max_lr");
    c.sources[kLrSetting] = p.from("warmup_max_lr");
  }
  if (!p.derive("total_num_steps", c, "schedule-steps") && p.has("total_num_steps")) {
    lr.total_steps = p.integer("total_num_steps");
  }
  if (p.has("warmup_type")) {
    const std::string warmup_type = p.string("warmup_type");
    ZDP_CHECK(warmup_type == "linear" || warmup_type == "log", ConfigError,
              "[config] {}: scheduler.params.warmup_type '{}' is unknown: use linear or log", p.source(), warmup_type);
    lr.warmup_type = optim::parse_warmup_type(warmup_type);
    c.sources["warmup-type"] = p.from("warmup_type");
  }
  apply_direct_keys(p, c);  // warmup_num_steps, warmup_min_lr, warmup_min_ratio, cos_min_ratio
  p.ignore({"last_batch_iteration"}, "schedules start at step 0");
  p.finish();
}

}  // namespace

void apply_scheduler(Section s, TrainConfig& c) {
  ZDP_CHECK(s.has("type"), ConfigError,
            "[config] {}: scheduler needs a 'type': WarmupLR, WarmupDecayLR or WarmupCosineLR", s.source());
  const std::string type = s.string("type");
  c.sources["schedule"] = s.from("type");
  auto& lr = c.engine.lr_schedule;
  // The type first (an unsupported one named), then its parameters.
  const ScheduleParams schedule = schedule_kind(type, s.source());
  lr.kind = schedule.kind;
  // The optimizer's lr as the file gave it (a WarmupLR's "auto" peak takes it, as Hugging Face fills both).
  const bool optimizer_lr_given = c.source_kind(kLrSetting) == SourceKind::kConfig;
  const double optimizer_lr = lr.max_lr;
  // DeepSpeed's defaults (deepspeed/runtime/lr_schedules.py). WarmupLR and
  // WarmupDecayLR set the rate themselves (warmup_max_lr, default 0.001);
  // WarmupCosineLR scales the optimizer's lr.
  lr.warmup_steps = 1000;
  lr.warmup_type = optim::WarmupType::kLog;
  c.sources["warmup-type"] = fmt::format("DeepSpeed default for {}", type);
  lr.min_lr = 0.0;
  lr.warmup_min_ratio = 0.0;
  lr.cos_min_ratio = 0.0001;
  lr.total_steps = 0;  // DeepSpeed requires total_num_steps for the decaying ones; zerodp uses --steps
  if (type != "WarmupCosineLR") {
    lr.max_lr = 0.001;
    c.sources[kLrSetting] = fmt::format("DeepSpeed default for {} (warmup_max_lr 0.001)", type);
  }
  c.sources["warmup"] = "DeepSpeed default (1000)";
  if (s.has("params")) {
    apply_scheduler_params(s.section("params"), c, type, schedule.params, optimizer_lr_given, optimizer_lr);
  }
  s.finish();
}

}  // namespace zerodp::train::ds
