// SPDX-License-Identifier: Apache-2.0
#include "train/effective_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "train/run_facts.h"

namespace zerodp::train {
namespace {

std::string loss_scale_text(const optim::LossScalerConfig& s) {
  if (s.mode == optim::LossScaleMode::kStatic) return fmt::format("static {:g}", s.initial_scale);
  return fmt::format("dynamic from {:g} (window {}, hysteresis {}, min {:g})", s.initial_scale, s.window, s.hysteresis,
                     s.min_scale);
}

}  // namespace

std::vector<Setting> effective_settings(const TrainConfig& c, int ranks) {
  std::vector<Setting> out;
  // Settings a DeepSpeed config cannot set keep zerodp's defaults even when one is given.
  auto add_own = [&](const std::string& name, nlohmann::json value) {
    out.push_back({name, std::move(value), c.sources.count(name) > 0 ? c.sources.at(name) : "zerodp default"});
  };
  auto add = [&](const std::string& name, nlohmann::json value) {
    out.push_back({name, std::move(value), c.source_of(name)});
  };
  const zero::EngineConfig& e = c.engine;
  add_own("model", c.model);
  add_own("data", c.data.empty() ? std::string("embedded arithmetic corpus") : c.data);
  if (!c.val_data.empty()) add_own("val-data", c.val_data);
  if (!c.tokenizer.empty()) add_own("tokenizer", c.tokenizer);
  if (!c.chat_template.empty()) add_own("chat-template", c.chat_template);
  add_own("steps", c.steps);
  add_own("seed", c.seed);
  const std::string ranks_source = c.sources.count("ranks") > 0       ? c.sources.at("ranks")
                                   : c.backend == comm::Backend::kMpi ? "mpirun -np"
                                                                      : "zerodp default: one per core";
  const std::string backend =
      c.source_kind("backend") == SourceKind::kDetected
          ? fmt::format("{} backend ({})", comm::backend_name(c.backend), c.sources.at("backend"))
          : fmt::format("{} backend", comm::backend_name(c.backend));
  out.push_back({"ranks", ranks, fmt::format("{}, {}", ranks_source, backend)});
  add("stage", stage_number(e.stage));
  add("precision", std::string(e.dtype.name()));
  add("micro-batch", c.micro_batch);
  add("grad-accum", e.grad_accum);
  add_own("seq-len", c.seq_len);
  const int64_t batch = static_cast<int64_t>(c.micro_batch) * e.grad_accum * ranks;
  out.push_back({"train-batch-size", batch,
                 c.train_batch_size > 0 ? c.source_of("train-batch-size")
                                        : fmt::format("derived: micro-batch {} x grad-accum {} x {} ranks",
                                                      c.micro_batch, e.grad_accum, ranks)});
  add("optimizer", std::string(optim::optimizer_kind_name(e.optimizer.kind)));
  if (e.optimizer.kind == optim::OptimizerKind::kSgd) {
    add("lr", e.optimizer.sgd.lr);
    add("momentum", e.optimizer.sgd.momentum);
    add("weight-decay", e.optimizer.sgd.weight_decay);
  } else if (e.optimizer.kind == optim::OptimizerKind::kLion) {
    add("lr", e.optimizer.lion.lr);
    add("betas", nlohmann::json::array({e.optimizer.lion.beta1, e.optimizer.lion.beta2}));
    add("weight-decay", e.optimizer.lion.weight_decay);
    add("lion-momentum-dtype", e.optimizer.lion.bf16_momentum ? "bf16" : "fp32");
    if (e.optimizer.lion.bf16_momentum) {
      add("lion-momentum-rounding", std::string(optim::rounding_mode_name(e.optimizer.lion.momentum_rounding)));
    }
  } else if (e.optimizer.kind == optim::OptimizerKind::kAdafactor) {
    const optim::AdafactorConfig& a = e.optimizer.adafactor;
    add("relative-step", a.relative_step);
    if (!a.relative_step) add("lr", a.lr);
    add("scale-parameter", a.scale_parameter);
    add("warmup-init", a.warmup_init);
    add("beta1", a.beta1);
    add("decay-rate", a.decay_rate);
    add("clip-threshold", a.clip_threshold);
    add("adafactor-eps", nlohmann::json::array({a.eps1, a.eps2}));
    add("weight-decay", a.weight_decay);
  } else {
    add("lr", e.optimizer.adam.lr);
    add("betas", nlohmann::json::array({e.optimizer.adam.beta1, e.optimizer.adam.beta2}));
    add("eps", e.optimizer.adam.eps);
    add("weight-decay", e.optimizer.adam.weight_decay);
    if (e.optimizer.kind == optim::OptimizerKind::kAdam8bit) {
      add("adam8bit-fp32-embedding", e.optimizer.adam.fp32_embedding);
      add("adam8bit-min-8bit-size", e.optimizer.adam.min_8bit_size);
    }
  }
  const optim::LrScheduleConfig& lr = e.lr_schedule;
  add("schedule", std::string(optim::lr_schedule_kind_name(lr.kind)));
  if (lr.kind != optim::LrScheduleKind::kConstant) {
    add("warmup", lr.warmup_steps);
    out.push_back(
        {"warmup-type", lr.warmup_type == optim::WarmupType::kLog ? "log" : "linear", c.source_of("schedule")});
    if (lr.kind == optim::LrScheduleKind::kWarmupCosine) add("min-lr-ratio", lr.cos_min_ratio);
    if (lr.kind != optim::LrScheduleKind::kWarmup) {
      out.push_back({"schedule-steps", lr.total_steps > 0 ? lr.total_steps : c.steps,
                     lr.total_steps > 0 && lr.total_steps != c.steps ? c.source_of("schedule") : "the run's steps"});
    }
  }
  add("clip", e.clip_norm);
  if (e.dtype == Dtype::fp16()) add("loss-scale", loss_scale_text(e.loss_scaler));
  if (traits(e.stage).reduce == GradReduce::kAllReduce) add("bucket", e.bucket_elements);
  add("overlap", e.overlap);
  if (traits(e.stage).gathers_on_acquire) add("prefetch", e.prefetch);
  if (e.quantize_weights != comm::Quantization::kNone) {
    add("quantize-weights", std::string(comm::quantization_name(e.quantize_weights)));
  }
  if (e.quantize_grads != comm::Quantization::kNone) {
    add("quantize-grads", std::string(comm::quantization_name(e.quantize_grads)));
  }
  if (e.quantize_weights != comm::Quantization::kNone || e.quantize_grads != comm::Quantization::kNone) {
    add("quantize-block", e.quantize_block);
    add("quantize-rounding", std::string(rounding_mode_name(e.quantize_rounding)));
    add("quantize-delay", e.quantize_delay);
  }
  if (e.shard_group_size > 0) add("shard-group-size", e.shard_group_size);
  add("log-every", c.log_every);
  add("activation-checkpointing", c.activation_checkpointing);
  // A config key's "auto": the flag filled it, or it was derived (a
  // default is what "auto" derives when nothing else gives a value).
  for (Setting& s : out) {
    const auto it = c.auto_keys.find(s.name);
    if (it == c.auto_keys.end()) continue;
    if (source_kind_of(s.source) == SourceKind::kFlag) {
      s.source += fmt::format(", for \"auto\" {} in --config", it->second);
    } else {
      const std::string how = s.source.starts_with("derived: ") ? s.source.substr(9) : s.source;
      s.source = fmt::format("derived: {} for \"auto\" {}", how, it->second);
    }
  }
  return out;
}

std::string format_effective_config(const std::vector<Setting>& settings) {
  // Grouped by where the values came from, most specific first; each group
  // wraps at about 110 columns.
  struct Group {
    const char* title;
    std::vector<std::string> items;
  };
  std::vector<Group> groups = {
      {"flags", {}}, {"config file", {}}, {"checkpoint", {}}, {"derived", {}}, {"defaults", {}}};
  for (const Setting& s : settings) {
    const std::string value = s.value.is_string() ? s.value.get<std::string>() : s.value.dump();
    const std::string& src = s.source;
    std::string item = s.name + " " + value;
    size_t g = 4;
    switch (source_kind_of(src)) {
      case SourceKind::kFlag:
        g = 0;
        if (src.find(',') != std::string::npos) item += " (" + src.substr(src.find(',') + 2) + ")";
        break;
      case SourceKind::kConfig:
        g = 1;
        item += " (" + src.substr(7) + ")";
        break;
      case SourceKind::kCheckpoint:
        g = 2;
        break;
      case SourceKind::kDerived:
        g = 3;
        item += " (" + src.substr(src.find(':') + 2) + ")";
        break;
      default:
        if (src != "zerodp default" && src != "DeepSpeed default") item += " (" + src + ")";
    }
    groups[g].items.push_back(item);
  }
  std::string out = "effective configuration:\n";
  for (const Group& g : groups) {
    if (g.items.empty()) continue;
    std::string line = fmt::format("  {}: ", g.title);
    const size_t indent = line.size();
    for (size_t i = 0; i < g.items.size(); ++i) {
      const std::string piece = g.items[i] + (i + 1 < g.items.size() ? ", " : "");
      if (line.size() + piece.size() > 110 && line.size() > indent) {
        line.pop_back();  // the space after the comma
        out += line + "\n";
        line = std::string(indent, ' ');
      }
      line += piece;
    }
    out += line + "\n";
  }
  return out;
}

nlohmann::json effective_config_record(const std::vector<Setting>& settings) {
  nlohmann::json config = nlohmann::json::object();
  for (const Setting& s : settings) config[s.name] = {{"value", s.value}, {"source", s.source}};
  nlohmann::json build = nlohmann::json::object();
  for (const auto& [name, value] : run_facts()) build[name] = value;
  return {{"config", config}, {"build", build}};
}

}  // namespace zerodp::train
