// SPDX-License-Identifier: Apache-2.0
#include "train/resume_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "ckpt/crc32c.h"
#include "core/error.h"
#include "train/data_files.h"
#include "train/run_facts.h"

namespace zerodp::train {
namespace {

using nlohmann::json;

// A setting the checkpoint decides: how to read it from and write it into a
// TrainConfig, as JSON.
struct Field {
  const char* name;
  std::function<json(const TrainConfig&)> get;
  std::function<void(TrainConfig&, const json&)> set;
};

// A saved "none" / "int8" / "int4".
comm::Quantization quantization_of(const json& v) {
  const std::string name = v.get<std::string>();
  for (const auto q : {comm::Quantization::kNone, comm::Quantization::kInt8, comm::Quantization::kInt4}) {
    if (comm::quantization_name(q) == name) return q;
  }
  ZDP_THROW(InputFileError, "[train] the checkpoint records an unknown quantization '{}'", name);
}

const std::vector<Field>& fields() {
  static const std::vector<Field> all = {
      {"model", [](const TrainConfig& c) { return json(c.model); },
       [](TrainConfig& c, const json& v) { c.model = v.get<std::string>(); }},
      {"data", [](const TrainConfig& c) { return json(c.data); },
       [](TrainConfig& c, const json& v) { c.data = v.get<std::string>(); }},
      {"tokenizer", [](const TrainConfig& c) { return json(c.tokenizer); },
       [](TrainConfig& c, const json& v) { c.tokenizer = v.get<std::string>(); }},
      {"chat-template", [](const TrainConfig& c) { return json(c.chat_template); },
       [](TrainConfig& c, const json& v) { c.chat_template = v.get<std::string>(); }},
      {"val-data", [](const TrainConfig& c) { return json(c.val_data); },
       [](TrainConfig& c, const json& v) { c.val_data = v.get<std::string>(); }},
      {"seq-len", [](const TrainConfig& c) { return json(c.seq_len); },
       [](TrainConfig& c, const json& v) { c.seq_len = v.get<int>(); }},
      {"micro-batch", [](const TrainConfig& c) { return json(c.micro_batch); },
       [](TrainConfig& c, const json& v) { c.micro_batch = v.get<int>(); }},
      {"grad-accum", [](const TrainConfig& c) { return json(c.engine.grad_accum); },
       [](TrainConfig& c, const json& v) {
         c.engine.grad_accum = v.get<int>();
         c.grad_accum_given = true;
       }},
      {"seed", [](const TrainConfig& c) { return json(c.seed); },
       [](TrainConfig& c, const json& v) { c.seed = v.get<uint64_t>(); }},
      {"steps", [](const TrainConfig& c) { return json(c.steps); },
       [](TrainConfig& c, const json& v) { c.steps = v.get<int>(); }},
      {"optimizer", [](const TrainConfig& c) { return json(optim::optimizer_kind_name(c.engine.optimizer.kind)); },
       [](TrainConfig& c, const json& v) {
         c.engine.optimizer.kind = optim::parse_optimizer_kind(v.get<std::string>());
       }},
      {"lion-momentum-dtype",
       [](const TrainConfig& c) { return json(c.engine.optimizer.lion.bf16_momentum ? "bf16" : "fp32"); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.lion.bf16_momentum = v.get<std::string>() == "bf16"; }},
      // (A checkpoint from before stochastic rounding has no such field: its
      // bf16 momentum was rounded to nearest, LionConfig's default.)
      {"lion-momentum-rounding",
       [](const TrainConfig& c) { return json(optim::rounding_mode_name(c.engine.optimizer.lion.momentum_rounding)); },
       [](TrainConfig& c, const json& v) {
         c.engine.optimizer.lion.momentum_rounding = optim::parse_rounding_mode(v.get<std::string>());
       }},
      {"adam8bit-fp32-embedding", [](const TrainConfig& c) { return json(c.engine.optimizer.adam.fp32_embedding); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adam.fp32_embedding = v.get<bool>(); }},
      {"adam8bit-min-8bit-size", [](const TrainConfig& c) { return json(c.engine.optimizer.adam.min_8bit_size); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adam.min_8bit_size = v.get<uint64_t>(); }},
      // Adafactor's settings (before "lr": an explicit lr is Adafactor's only
      // without relative steps).
      {"relative-step", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.relative_step); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.relative_step = v.get<bool>(); }},
      {"scale-parameter", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.scale_parameter); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.scale_parameter = v.get<bool>(); }},
      {"warmup-init", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.warmup_init); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.warmup_init = v.get<bool>(); }},
      {"beta1", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.beta1); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.beta1 = v.get<double>(); }},
      {"decay-rate", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.decay_rate); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.decay_rate = v.get<double>(); }},
      {"clip-threshold", [](const TrainConfig& c) { return json(c.engine.optimizer.adafactor.clip_threshold); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adafactor.clip_threshold = v.get<double>(); }},
      {"adafactor-eps",
       [](const TrainConfig& c) {
         return json::array({c.engine.optimizer.adafactor.eps1, c.engine.optimizer.adafactor.eps2});
       },
       [](TrainConfig& c, const json& v) {
         c.engine.optimizer.adafactor.eps1 = v.at(0).get<double>();
         c.engine.optimizer.adafactor.eps2 = v.at(1).get<double>();
       }},
      {"lr", [](const TrainConfig& c) { return json(c.engine.lr_schedule.max_lr); },
       [](TrainConfig& c, const json& v) {
         optim::OptimizerConfig& o = c.engine.optimizer;
         c.engine.lr_schedule.max_lr = o.adam.lr = o.sgd.lr = o.lion.lr = v.get<double>();
         if (!o.adafactor.relative_step) o.adafactor.lr = v.get<double>();
       }},
      // The betas of the run's kind ("optimizer" is set before them).
      {"betas",
       [](const TrainConfig& c) {
         const optim::OptimizerConfig& o = c.engine.optimizer;
         if (o.kind == optim::OptimizerKind::kLion) return json::array({o.lion.beta1, o.lion.beta2});
         return json::array({o.adam.beta1, o.adam.beta2});
       },
       [](TrainConfig& c, const json& v) {
         optim::OptimizerConfig& o = c.engine.optimizer;
         o.adam.beta1 = o.lion.beta1 = v.at(0).get<double>();
         o.adam.beta2 = o.lion.beta2 = v.at(1).get<double>();
       }},
      {"eps", [](const TrainConfig& c) { return json(c.engine.optimizer.adam.eps); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.adam.eps = v.get<double>(); }},
      {"weight-decay", [](const TrainConfig& c) { return json(optim::config_weight_decay(c.engine.optimizer)); },
       [](TrainConfig& c, const json& v) {
         optim::OptimizerConfig& o = c.engine.optimizer;
         o.adam.weight_decay = o.sgd.weight_decay = o.lion.weight_decay = o.adafactor.weight_decay = v.get<double>();
       }},
      {"momentum", [](const TrainConfig& c) { return json(c.engine.optimizer.sgd.momentum); },
       [](TrainConfig& c, const json& v) { c.engine.optimizer.sgd.momentum = v.get<double>(); }},
      {"schedule", [](const TrainConfig& c) { return json(optim::lr_schedule_kind_name(c.engine.lr_schedule.kind)); },
       [](TrainConfig& c, const json& v) {
         c.engine.lr_schedule.kind = optim::parse_lr_schedule_kind(v.get<std::string>());
       }},
      {"warmup", [](const TrainConfig& c) { return json(c.engine.lr_schedule.warmup_steps); },
       [](TrainConfig& c, const json& v) { c.engine.lr_schedule.warmup_steps = v.get<int64_t>(); }},
      {"min-lr-ratio", [](const TrainConfig& c) { return json(c.engine.lr_schedule.cos_min_ratio); },
       [](TrainConfig& c, const json& v) { c.engine.lr_schedule.cos_min_ratio = v.get<double>(); }},
      {"clip", [](const TrainConfig& c) { return json(c.engine.clip_norm); },
       [](TrainConfig& c, const json& v) { c.engine.clip_norm = v.get<double>(); }},
      // The compressed collectives change the trajectory: a resume keeps them.
      {"quantize-weights",
       [](const TrainConfig& c) { return json(comm::quantization_name(c.engine.quantize_weights)); },
       [](TrainConfig& c, const json& v) { c.engine.quantize_weights = quantization_of(v); }},
      {"quantize-grads", [](const TrainConfig& c) { return json(comm::quantization_name(c.engine.quantize_grads)); },
       [](TrainConfig& c, const json& v) { c.engine.quantize_grads = quantization_of(v); }},
      {"quantize-block", [](const TrainConfig& c) { return json(c.engine.quantize_block); },
       [](TrainConfig& c, const json& v) { c.engine.quantize_block = v.get<uint32_t>(); }},
      {"quantize-rounding", [](const TrainConfig& c) { return json(rounding_mode_name(c.engine.quantize_rounding)); },
       [](TrainConfig& c, const json& v) { c.engine.quantize_rounding = parse_rounding_mode(v.get<std::string>()); }},
      {"quantize-delay", [](const TrainConfig& c) { return json(c.engine.quantize_delay); },
       [](TrainConfig& c, const json& v) { c.engine.quantize_delay = v.get<int64_t>(); }},
  };
  return all;
}

// The schedule's own length and shape details, kept as one record so that a
// longer --steps continues the saved schedule instead of stretching it.
json schedule_detail(const TrainConfig& c) {
  const optim::LrScheduleConfig& lr = c.engine.lr_schedule;
  return {{"total_steps", lr.total_steps > 0 ? lr.total_steps : c.steps},
          {"min_lr", lr.min_lr},
          {"warmup_type", lr.warmup_type == optim::WarmupType::kLog ? "log" : "linear"},
          {"warmup_min_ratio", lr.warmup_min_ratio}};
}

std::string show(const json& v) {
  return v.is_string() ? (v.get<std::string>().empty() ? "(none)" : v.get<std::string>()) : v.dump();
}

// --steps may always grow: it says how far to train, not how.
bool may_grow(const std::string& name) { return name == "steps"; }

}  // namespace

std::vector<std::string> overridable_settings() {
  std::vector<std::string> names;
  for (const Field& f : fields()) {
    if (!may_grow(f.name)) names.push_back(f.name);
  }
  return names;
}

DataFingerprint fingerprint_data(const std::string& path) {
  DataFingerprint f;
  if (path.empty()) return f;
  std::vector<char> buffer(1 << 20);
  for (const std::string& file : data_files(path)) {  // a glob's matches, in order
    std::ifstream in(file, std::ios::binary);
    ZDP_CHECK(in.good(), ConfigError, "[train] cannot read the data file {}: check the path", file);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const auto got = static_cast<size_t>(in.gcount());
      f.crc32c = ckpt::crc32c_extend(f.crc32c, buffer.data(), got);
      f.bytes += got;
    }
  }
  return f;
}

std::map<std::string, std::string> run_record(const TrainConfig& config, const DataFingerprint& data, int ranks) {
  json settings = json::object();
  for (const Field& f : fields()) settings[f.name] = f.get(config);
  settings["schedule-detail"] = schedule_detail(config);
  // The global batch: a resume keeps it at any rank count, also from a
  // checkpoint resharded to another one (its shard count is not the run's).
  settings["micro-batches-per-step"] = config.engine.grad_accum * ranks;
  std::map<std::string, std::string> out = {{"train_config", settings.dump()},
                                            {"model", config.model},
                                            {"data", config.data.empty() ? "embedded" : config.data}};
  for (const auto& [name, value] : run_facts()) out["build." + name] = value;
  if (!config.data.empty()) {
    out["data_bytes"] = std::to_string(data.bytes);
    out["data_crc32c"] = std::to_string(data.crc32c);
  }
  return out;
}

std::string apply_checkpoint_config(TrainConfig& c, const ckpt::Manifest& manifest, const std::string& path) {
  const std::vector<std::string> names = overridable_settings();
  for (const std::string& name : c.resume_overrides) {
    ZDP_CHECK(std::find(names.begin(), names.end(), name) != names.end(), ConfigError,
              "[train] --resume-override {}: no such setting; the names are {}", name, fmt::join(names, ", "));
  }
  const auto record = manifest.metadata.find("train_config");
  std::string notes;
  if (record == manifest.metadata.end()) {
    // Saved before checkpoints recorded their run: only the model is known.
    if (!c.given("model")) c.model = manifest.model_json;
    return fmt::format("{} does not record its run's settings (an older checkpoint): the flags given apply", path);
  }
  json saved = json::parse(record->second);
  if (saved.value("optimizer", "") == "adam8bit" && !saved.contains("adam8bit-fp32-embedding")) {
    // Saved before 8-bit Adam kept any unit in fp32: every unit was 8-bit.
    saved["adam8bit-fp32-embedding"] = false;
    saved["adam8bit-min-8bit-size"] = 0;
  }
  if (saved.contains("quantize-grads") && !saved.contains("quantize-block")) {
    // Saved before the block was a setting: every block had 256 elements.
    saved["quantize-block"] = 256;
  }
  if (saved.contains("quantize-weights") || saved.contains("quantize-grads")) {
    // Saved before these were settings: every code was rounded to the
    // nearest, and the collectives quantized from the first step.
    if (!saved.contains("quantize-rounding")) saved["quantize-rounding"] = "nearest";
    if (!saved.contains("quantize-delay")) saved["quantize-delay"] = 0;
  }
  std::vector<std::string> taken, overridden;
  for (const Field& f : fields()) {
    if (!saved.contains(f.name)) continue;
    const json& was = saved.at(f.name);
    if (!c.given(f.name)) {
      // The model as the checkpoint recorded it, so a moved JSON file does not matter.
      if (std::string(f.name) == "model") {
        c.model = manifest.model_json;
      } else {
        f.set(c, was);
      }
      // The global batch, not the accumulation, is what the run trained
      // with: another rank count shares the same micro-batches (resolve_batch).
      if (std::string(f.name) == "grad-accum") {
        c.resume_micro_batches = saved.contains("micro-batches-per-step")
                                     ? saved.at("micro-batches-per-step").get<int>()
                                     : was.get<int>() * manifest.ranks;  // saved before the record had it
      }
      c.sources[f.name] = "checkpoint";
      continue;
    }
    const json now = f.get(c);
    if (now == was) continue;
    if (may_grow(f.name)) continue;
    // The model is compared by the engine's own check (ckpt::load), which
    // names the difference; the name may differ for the same model.
    if (std::string(f.name) == "model") continue;
    if (std::find(c.resume_overrides.begin(), c.resume_overrides.end(), f.name) != c.resume_overrides.end()) {
      overridden.push_back(fmt::format("{} {} (saved: {})", f.name, show(now), show(was)));
      continue;
    }
    ZDP_THROW(ConfigError,
              "[train] {} {} contradicts the checkpoint {}, which was saved with {}: leave {} out to continue as "
              "saved, or add --resume-override {} to change it",
              c.spelled(f.name, f.name), show(now), path, show(was), c.spelled(f.name, f.name), f.name);
  }
  if (saved.contains("schedule-detail") && !c.given("schedule")) {
    const json& d = saved.at("schedule-detail");
    optim::LrScheduleConfig& lr = c.engine.lr_schedule;
    lr.total_steps = d.at("total_steps").get<int64_t>();
    lr.min_lr = d.at("min_lr").get<double>();
    lr.warmup_type = optim::parse_warmup_type(d.at("warmup_type").get<std::string>());
    lr.warmup_min_ratio = d.at("warmup_min_ratio").get<double>();
  }

  // Nothing left to train is refused, not a silent success.
  ZDP_CHECK(c.steps > manifest.data_step, ConfigError,
            "[train] {} is at step {} and this run's --steps is {}: nothing to train; give --steps above {} to "
            "continue it",
            path, manifest.data_step, c.steps, manifest.data_step);

  for (const auto& [name, source] : c.sources) {
    if (source == "checkpoint" && name != "model") taken.push_back(name);
  }
  notes = fmt::format("continuing as saved: {} taken from the checkpoint",
                      taken.empty() ? "nothing" : fmt::format("{}", fmt::join(taken, ", ")));
  if (!overridden.empty()) notes += fmt::format("; overridden (--resume-override): {}", fmt::join(overridden, "; "));
  return notes;
}

std::string check_saved_data(const TrainConfig& c, const ckpt::Manifest& manifest, const std::string& path,
                             const DataFingerprint& now) {
  const auto record = manifest.metadata.find("train_config");
  if (c.data.empty() || record == manifest.metadata.end() || manifest.metadata.count("data_crc32c") == 0) return "";
  if (c.data != json::parse(record->second).value("data", std::string())) return "";  // another data, overridden
  const uint64_t bytes = std::stoull(manifest.metadata.at("data_bytes"));
  const auto crc = static_cast<uint32_t>(std::stoul(manifest.metadata.at("data_crc32c")));
  if (now.bytes == bytes && now.crc32c == crc) return "";
  ZDP_CHECK(std::find(c.resume_overrides.begin(), c.resume_overrides.end(), "data") != c.resume_overrides.end(),
            ConfigError,
            "[train] the data file {} has changed since the checkpoint {} was saved ({} bytes, CRC-32C {:08x}; "
            "now {} bytes, {:08x}): restore it, or add --resume-override data to continue on the changed file",
            c.data, path, bytes, crc, now.bytes, now.crc32c);
  return fmt::format("; overridden (--resume-override): data {} (changed since the save)", c.data);
}

}  // namespace zerodp::train
