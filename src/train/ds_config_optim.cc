// SPDX-License-Identifier: Apache-2.0
// The optimizer and scheduler sections of a DeepSpeed config. The type is
// read first: a type zerodp lacks is named before any of its parameters.
// Each type takes the parameters its DeepSpeed (or PyTorch, bitsandbytes,
// Hugging Face) constructor takes, no others: DeepSpeed refuses a keyword
// another type takes, and so does zerodp, naming the type and its keys.
#include <fmt/format.h>

#include <cctype>
#include <string>
#include <vector>

#include "train/ds_config_section.h"

namespace zerodp::train::ds {
namespace {

std::string lowercase(const std::string& s) {
  std::string out;
  for (char ch : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// DeepSpeed has no Adafactor; "Adafactor" takes Hugging Face transformers'
// Adafactor's parameter names and defaults (optim::AdafactorConfig).
void apply_adafactor(Section& o, TrainConfig& c) {
  optim::AdafactorConfig& a = c.engine.optimizer.adafactor;
  a = optim::AdafactorConfig{};
  if (o.has("params")) {
    Section p = o.section("params");
    p.only({"lr", "eps", "clip_threshold", "decay_rate", "beta1", "weight_decay", "scale_parameter", "relative_step",
            "warmup_init"},
           "Adafactor");
    if (!p.derive("lr", c, "lr") && p.has("lr")) {  // null: HF's None
      c.engine.lr_schedule.max_lr = p.number("lr");
      c.sources["lr"] = p.from("lr");
    }
    if (p.has("eps")) {
      c.sources["adafactor-eps"] = p.from("eps");
      const json& e = p.at("eps");
      ZDP_CHECK(e.is_array() && e.size() == 2 && e[0].is_number() && e[1].is_number(), ConfigError,
                "[config] {}: optimizer.params.eps of Adafactor must be two numbers [eps1, eps2], e.g. [1e-30, "
                "1e-3], got {}",
                p.source(), e.dump());
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
    if (!p.derive("weight_decay", c, "weight-decay")) number("weight_decay", "weight-decay", a.weight_decay);
    boolean("scale_parameter", "scale-parameter", a.scale_parameter);
    boolean("relative_step", "relative-step", a.relative_step);
    boolean("warmup_init", "warmup-init", a.warmup_init);
    p.finish();
  }
  c.engine.optimizer.kind = optim::OptimizerKind::kAdafactor;
  c.sources["optimizer"] = o.from("type");
  o.finish();
}

// The parameters optimizer.type takes (DeepSpeed's FusedAdam /
// DeepSpeedCPUAdam, torch.optim.SGD, FusedLion, bitsandbytes' 8-bit Adam);
// an unsupported type is refused first, named.
std::vector<std::string> accepted_params(const std::string& lower, const std::string& type, std::string_view source) {
  if (lower == "adam" || lower == "adamw") {
    return {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "bias_correction", "amsgrad", "torch_adam", "fused"};
  }
  if (lower == "sgd") return {"lr", "momentum", "weight_decay", "nesterov", "dampening"};
  if (lower == "lion") return {"lr", "betas", "weight_decay"};
  if (lower == "adam8bit" || lower == "adamw8bit") {
    return {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "min_8bit_size", "fp32_embedding"};
  }
  ZDP_THROW(ConfigError,
            "[config] {}: optimizer.type '{}' is not supported: use Adam, AdamW, SGD, Lion, Adam8bit or Adafactor",
            source, type);
}

// lr, betas, eps and weight_decay, as every optimizer but SGD reads them.
void apply_shared_params(Section& p, TrainConfig& c) {
  auto& opt = c.engine.optimizer;
  // Hugging Face's Trainer fills these four from its arguments; zerodp
  // from the flags (--lr, --betas, --eps has none, --weight-decay), else
  // DeepSpeed's defaults.
  if (!p.derive("lr", c, "lr") && p.has("lr")) {
    c.engine.lr_schedule.max_lr = p.number("lr");
    c.sources["lr"] = p.from("lr");
  }
  if (!p.derive("betas", c, "betas") && p.has("betas")) {
    c.sources["betas"] = p.from("betas");
    const json& b = p.at("betas");
    ZDP_CHECK(b.is_array() && b.size() == 2 && b[0].is_number() && b[1].is_number(), ConfigError,
              "[config] {}: optimizer.params.betas must be two numbers, got {}", p.source(), b.dump());
    opt.adam.beta1 = opt.lion.beta1 = b[0].get<double>();
    opt.adam.beta2 = opt.lion.beta2 = b[1].get<double>();
  }
  if (!p.derive("eps", c, "eps") && p.has("eps")) {
    opt.adam.eps = p.number("eps");
    c.sources["eps"] = p.from("eps");
  }
  if (!p.derive("weight_decay", c, "weight-decay") && p.has("weight_decay")) {
    opt.adam.weight_decay = opt.sgd.weight_decay = opt.lion.weight_decay = p.number("weight_decay");
    c.sources["weight-decay"] = p.from("weight_decay");
  }
}

// 8-bit Adam's own parameters.
void apply_adam8bit_params(Section& p, TrainConfig& c) {
  auto& opt = c.engine.optimizer;
  // Which units keep fp32 moments: bitsandbytes' constructor argument
  // min_8bit_size (per unit here), and zerodp's fp32_embedding (what
  // bitsandbytes does with a module override or StableEmbedding).
  if (p.has("min_8bit_size")) {
    const int size = p.integer("min_8bit_size");
    ZDP_CHECK(size >= 0, ConfigError,
              "[config] {}: optimizer.params.min_8bit_size {} must be >= 0 (0: every unit 8-bit)", p.source(), size);
    opt.adam.min_8bit_size = static_cast<uint64_t>(size);
    c.sources["adam8bit-min-8bit-size"] = p.from("min_8bit_size");
  }
  if (p.has("fp32_embedding")) {
    opt.adam.fp32_embedding = p.boolean("fp32_embedding");
    c.sources["adam8bit-fp32-embedding"] = p.from("fp32_embedding");
  }
}

}  // namespace

void apply_optimizer(Section o, TrainConfig& c) {
  const std::string type = o.has("type") ? o.string("type") : "AdamW";
  const std::string lower = lowercase(type);
  auto& opt = c.engine.optimizer;
  if (lower == "adafactor") return apply_adafactor(o, c);
  // The type first, then the parameters it takes.
  const bool adam8bit = lower == "adam8bit" || lower == "adamw8bit";
  const std::vector<std::string> accepted = accepted_params(lower, type, o.source());
  bool adam_w_mode = true;  // DeepSpeed's "Adam" is AdamW unless adam_w_mode is false
  bool adam_w_mode_given = false;
  if (o.has("params")) {
    Section p = o.section("params");
    p.only(accepted, "optimizer.type '" + type + "'");
    if (p.has("adam_w_mode")) {
      adam_w_mode = p.boolean("adam_w_mode");
      adam_w_mode_given = true;
    }
    apply_shared_params(p, c);
    if (p.has("momentum")) {
      opt.sgd.momentum = p.number("momentum");
      c.sources["momentum"] = p.from("momentum");
    }
    if (p.has("nesterov")) opt.sgd.nesterov = p.boolean("nesterov");
    if (adam8bit) apply_adam8bit_params(p, c);
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
  } else {
    // bitsandbytes' class names (bnb.optim.Adam8bit / AdamW8bit): both decay
    // decoupled in bitsandbytes' 8-bit kernels, and so does zerodp's.
    ZDP_CHECK(adam_w_mode || !adam_w_mode_given, ConfigError,
              "[config] {}: optimizer.type '{}' decays decoupled (as AdamW); remove adam_w_mode: false", o.source(),
              type);
    opt.kind = optim::OptimizerKind::kAdam8bit;
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
  if (!p.derive("warmup_min_lr", c, "warmup-min-lr") && p.has("warmup_min_lr")) {
    lr.min_lr = p.number("warmup_min_lr");
  }
  if (p.derive("warmup_max_lr", c, "lr", optimizer_lr_given ? "optimizer.params.lr" : "")) {
    if (optimizer_lr_given) lr.max_lr = optimizer_lr;
  } else if (p.has("warmup_max_lr")) {
    lr.max_lr = p.number("warmup_max_lr");
    c.sources["lr"] = p.from("warmup_max_lr");
  }
  if (!p.derive("warmup_num_steps", c, "warmup") && p.has("warmup_num_steps")) {
    lr.warmup_steps = p.integer("warmup_num_steps");
    c.sources["warmup"] = p.from("warmup_num_steps");
  }
  if (!p.derive("total_num_steps", c, "schedule-steps") && p.has("total_num_steps")) {
    lr.total_steps = p.integer("total_num_steps");
  }
  if (p.has("warmup_type")) {
    const std::string warmup_type = p.string("warmup_type");
    ZDP_CHECK(warmup_type == "linear" || warmup_type == "log", ConfigError,
              "[config] {}: scheduler.params.warmup_type '{}' is unknown: use linear or log", p.source(), warmup_type);
    lr.warmup_type = optim::parse_warmup_type(warmup_type);
  }
  if (!p.derive("warmup_min_ratio", c, "warmup-min-ratio") && p.has("warmup_min_ratio")) {
    lr.warmup_min_ratio = p.number("warmup_min_ratio");
  }
  if (!p.derive("cos_min_ratio", c, "min-lr-ratio") && p.has("cos_min_ratio")) {
    lr.cos_min_ratio = p.number("cos_min_ratio");
  }
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
  const bool optimizer_lr_given = c.source_kind("lr") == SourceKind::kConfig;
  const double optimizer_lr = lr.max_lr;
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
  c.sources["warmup"] = "DeepSpeed default (1000)";
  if (s.has("params")) {
    apply_scheduler_params(s.section("params"), c, type, schedule.params, optimizer_lr_given, optimizer_lr);
  }
  s.finish();
}

}  // namespace zerodp::train::ds
