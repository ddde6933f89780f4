// SPDX-License-Identifier: Apache-2.0
#include "train/resume_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "ckpt/crc32c.h"
#include "core/error.h"
#include "train/data_files.h"
#include "train/run_facts.h"
#include "train/settings.h"

namespace zerodp::train {
namespace {

using nlohmann::json;

// The settings a checkpoint records, in the order a resume applies them.
std::vector<const SettingRow*> recorded_settings() {
  std::vector<const SettingRow*> out;
  for (const SettingRow& r : settings()) {
    if (r.recorded()) out.push_back(&r);
  }
  return out;
}

const std::vector<const SettingRow*>& fields() {
  static const std::vector<const SettingRow*> all = recorded_settings();
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

}  // namespace

std::vector<std::string> overridable_settings() {
  std::vector<std::string> names;
  for (const SettingRow* f : fields()) {
    if (f->resume == ResumePolicy::kMustMatch) names.emplace_back(f->name);
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
  for (const SettingRow* f : fields()) settings[std::string(f->name)] = f->get(config);
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

namespace {

// A record saved before a setting existed, in today's terms: the value the
// run then had without it.
void complete_old_record(json& saved) {
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
}

// A setting the flags did not give: the checkpoint's value.
void take_saved(TrainConfig& c, const SettingRow& f, const json& saved, const ckpt::Manifest& manifest) {
  const std::string name(f.name);
  const json& was = saved.at(name);
  // The model as the checkpoint recorded it, so a moved JSON file does not matter.
  if (name == "model") {
    c.model = manifest.model_json;
  } else {
    f.set(c, was);
  }
  // The global batch, not the accumulation, is what the run trained
  // with: another rank count shares the same micro-batches (resolve_batch).
  if (name == kGradAccumSetting) {
    c.resume_micro_batches = saved.contains("micro-batches-per-step")
                                 ? saved.at("micro-batches-per-step").get<int>()
                                 : was.get<int>() * manifest.ranks;  // saved before the record had it
  }
  c.sources[name] = "checkpoint";
}

// A setting the flags gave: the same value, one that may change, an
// override (added to `overridden`), or a refusal naming both values.
void check_given(const TrainConfig& c, const SettingRow& f, const json& was, const std::string& path,
                 std::vector<std::string>& overridden) {
  const std::string name(f.name);
  const json now = f.get(c);
  if (now == was || f.resume == ResumePolicy::kMayChange) return;
  // The model is compared by the engine's own check (ckpt::load), which
  // names the difference; the name may differ for the same model.
  if (name == "model") return;
  if (std::find(c.resume_overrides.begin(), c.resume_overrides.end(), name) != c.resume_overrides.end()) {
    overridden.push_back(fmt::format("{} {} (saved: {})", name, show(now), show(was)));
    return;
  }
  ZDP_THROW(ConfigError,
            "[train] {} {} contradicts the checkpoint {}, which was saved with {}: leave {} out to continue as "
            "saved, or add --resume-override {} to change it",
            c.spelled(name), show(now), path, show(was), c.spelled(name), name);
}

}  // namespace

std::string apply_checkpoint_config(TrainConfig& c, const ckpt::Manifest& manifest, const std::string& path) {
  const std::vector<std::string> names = overridable_settings();
  for (const std::string& name : c.resume_overrides) {
    ZDP_CHECK(std::find(names.begin(), names.end(), name) != names.end(), ConfigError,
              "[train] --resume-override {}: no such setting; the names are {}", name, fmt::join(names, ", "));
  }
  const auto record = manifest.metadata.find("train_config");
  if (record == manifest.metadata.end()) {
    // Saved before checkpoints recorded their run: only the model is known.
    if (!c.given("model")) c.model = manifest.model_json;
    return fmt::format("{} does not record its run's settings (an older checkpoint): the flags given apply", path);
  }
  json saved = json::parse(record->second);
  complete_old_record(saved);
  std::vector<std::string> taken, overridden;
  for (const SettingRow* f : fields()) {
    const std::string name(f->name);
    if (!saved.contains(name)) continue;
    if (c.given(name)) {
      check_given(c, *f, saved.at(name), path, overridden);
    } else {
      take_saved(c, *f, saved, manifest);
    }
  }
  if (saved.contains("schedule-detail") && !c.given("schedule")) {
    const json& d = saved.at("schedule-detail");
    optim::LrScheduleConfig& lr = c.engine.lr_schedule;
    lr.total_steps = d.at("total_steps").get<int64_t>();
    lr.min_lr = d.at("min_lr").get<double>();
    if (!c.given("warmup-type")) lr.warmup_type = optim::parse_warmup_type(d.at("warmup_type").get<std::string>());
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
  std::string notes = fmt::format("continuing as saved: {} taken from the checkpoint",
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
