// SPDX-License-Identifier: Apache-2.0
// One object of a DeepSpeed JSON config as ds_config.cc and
// ds_config_optim.cc read it: typed reads that name the file and the key in
// every refusal, unknown keys refused at finish(), DeepSpeed keys without an
// effect here warned about, and Hugging Face Trainer's "auto" placeholder
// either derived (derive()) or collected for one refusal naming them all.
// Internal to src/train. Thread-safety: a Section is used by one thread.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "train/ds_config.h"

namespace zerodp::train::ds {

using nlohmann::json;

class Section {
 public:
  // `autos` collects the keys whose "auto" nothing derives (shared by a
  // section and the sections read from it; it outlives them).
  Section(const json& j, std::string path, std::string_view source, const WarningSink& warn,
          std::vector<std::string>& autos)
      : j_(j), path_(std::move(path)), source_(source), warn_(warn), autos_(autos) {
    ZDP_CHECK(j.is_object(), ConfigError, "[config] {}: '{}' must be an object", source_, display());
  }

  // Whether the key holds a value. A key holding "auto" that the caller
  // did not derive() first is collected as underivable and reads as absent.
  bool has(const std::string& key) {
    seen_.insert(key);
    if (is_auto(key)) {
      // Once each, though a key may be asked about twice (optimizer.type:
      // by the dispatch, then by the optimizer's own reader).
      if (std::find(autos_.begin(), autos_.end(), name(key)) == autos_.end()) autos_.push_back(name(key));
      return false;
    }
    return j_.contains(key) && !j_.at(key).is_null();
  }
  bool is_auto(const std::string& key) const {
    const auto it = j_.find(key);
    return it != j_.end() && it->is_string() && it->get<std::string>() == "auto";
  }
  // For a key whose "auto" zerodp can fill: true when the key holds "auto",
  // which then counts as read. The setting keeps what a flag gives or its
  // default; `config.auto_keys` names the key for the effective
  // configuration, and a non-empty `how` becomes the setting's source
  // ("derived: HOW").
  bool derive(const std::string& key, TrainConfig& config, const std::string& setting, const std::string& how = "") {
    if (!is_auto(key)) return false;
    seen_.insert(key);
    config.auto_keys[setting] = name(key);
    if (!how.empty()) config.sources[setting] = "derived: " + how;
    return true;
  }

  const json& at(const std::string& key) const { return j_.at(key); }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // "config KEY.PATH": where a setting came from, for the effective configuration.
  std::string from(const std::string& key) const { return "config " + name(key); }
  std::string_view source() const { return source_; }

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
  Section section(const std::string& key) { return Section(at(key), name(key), source_, warn_, autos_); }

  // Keys DeepSpeed knows that zerodp ignores: a warning each, when present
  // (with any value, "auto" included).
  void ignore(std::initializer_list<const char*> keys, const char* why) {
    for (const char* k : keys) {
      seen_.insert(k);
      if (j_.contains(k) && !j_.at(k).is_null()) {
        warn_(fmt::format("{}: DeepSpeed key '{}' has no effect here ({})", source_, name(k), why));
      }
    }
  }
  // The keys `owner` (an optimizer or scheduler type) takes, as DeepSpeed
  // passes them to its constructor: any other is refused naming the owner
  // and what it accepts, before any value is read.
  void only(const std::vector<std::string>& accepted, const std::string& owner) const {
    for (const auto& [key, value] : j_.items()) {
      bool ok = false;
      for (const std::string& a : accepted) ok = ok || a == key;
      ZDP_CHECK(ok, ConfigError, "[config] {}: '{}' is not a parameter of {}: it accepts {}", source_, name(key), owner,
                fmt::join(accepted, ", "));
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
  std::vector<std::string>& autos_;
  std::set<std::string> seen_;
};

// ds_config.cc: the keys of `section` that rows read directly
// (settings.h, DsKey::direct), each set through its row.
void apply_direct_keys(Section& section, TrainConfig& c);

// ds_config_optim.cc: the optimizer and scheduler sections.
void apply_optimizer(Section o, TrainConfig& c);
void apply_scheduler(Section s, TrainConfig& c);

}  // namespace zerodp::train::ds
