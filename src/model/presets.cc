// SPDX-License-Identifier: Apache-2.0
#include "model/presets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace zerodp::model {
namespace {

std::vector<std::string> family_kinds() {
  std::vector<std::string> kinds;
  for (const Family* f : families()) kinds.push_back(fmt::format("\"{}\"", f->kind));
  return kinds;
}

const ModelSpec& spec_of(const ModelConfig& config) {
  ZDP_CHECK(config.spec != nullptr, ConfigError, "[model] the config \"{}\" names no model (no family's spec)",
            config.name);
  return *config.spec;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const Family* f : families()) {
    for (const Preset& p : f->presets) names.push_back(p.name);
  }
  return names;
}

ModelConfig model_preset(std::string_view name) {
  for (const Family* f : families()) {
    for (const Preset& p : f->presets) {
      if (p.name == name) return {p.name, p.spec};
    }
  }
  ZDP_THROW(ConfigError, "[model] unknown model \"{}\"; use one of {} or a JSON config (file.json or '{{...}}')", name,
            fmt::join(model_preset_names(), ", "));
}

ModelConfig model_config_from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    ZDP_THROW(ConfigError, "[model config] not valid JSON: {}", e.what());
  }
  ZDP_CHECK(j.is_object(), ConfigError, "[model config] expected a JSON object, got {}", j.type_name());
  ZDP_CHECK(!j.contains("type") || j.contains("kind"), ConfigError,
            "[model config] unknown key \"type\": write \"kind\": {} (and \"max_seq_len\" for \"context\"; the "
            "model schema is what `zerodp model info` and `zerodp train --model` take)",
            fmt::join(family_kinds(), " or "));
  ZDP_CHECK(j.contains("kind") && j["kind"].is_string(), ConfigError, "[model config] missing \"kind\": {}",
            fmt::join(family_kinds(), " or "));
  const std::string kind = j["kind"].get<std::string>();
  const Family* family = find_family(kind);
  ZDP_CHECK(family != nullptr, ConfigError, "[model config] kind \"{}\" must be {}", kind,
            fmt::join(family_kinds(), " or "));
  SpecPtr spec = family->from_json(j);
  ZDP_CHECK(spec != nullptr && spec->kind() == kind, ConfigError,
            "[model config] family \"{}\" returned no spec of its own kind", kind);
  return {"custom", std::move(spec)};
}

std::string model_config_json(const ModelConfig& c) { return spec_of(c).to_json().dump(); }

ModelConfig resolve_model_config(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\n\r");
  if (first != std::string_view::npos && s[first] == '{') return model_config_from_json(s);
  if (s.size() > 5 && s.substr(s.size() - 5) == ".json") {
    std::ifstream in{std::string(s)};
    ZDP_CHECK(in.good(), ConfigError, "[model config] cannot open {}", s);
    std::stringstream buf;
    buf << in.rdbuf();
    return model_config_from_json(buf.str());
  }
  return model_preset(s);
}

std::unique_ptr<Model> make_model(const ModelConfig& config) { return spec_of(config).build(); }

size_t num_params(const ModelConfig& config) { return spec_of(config).num_params(); }

}  // namespace zerodp::model
