// SPDX-License-Identifier: Apache-2.0
#include "ckpt/model_record.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::ckpt {

model::ModelConfig manifest_model_config(const Manifest& manifest, const std::string& path) {
  try {
    return model::model_config_from_json(manifest.model_json);
  } catch (const ConfigError& e) {
    ZDP_THROW(InputFileError, "[ckpt] {}: the recorded model is not valid: {}", path, e.message());
  }
}

void check_same_model(const Manifest& manifest, const std::vector<UnitEntry>& units, const std::string& description,
                      const std::string& model_json, const std::string& path) {
  uint64_t num_params = 0;
  for (const auto& u : units) num_params += u.count;
  ZDP_CHECK(manifest.num_params == num_params && manifest.units.size() == units.size(), ConfigError,
            "[ckpt] {}: saved from a different model ({}, {} parameters in {} units); this run trains {} ({} "
            "parameters in {} units): use the same --model as the saved run",
            path, manifest.model_description, manifest.num_params, manifest.units.size(), description, num_params,
            units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    ZDP_CHECK(manifest.units[u].count == units[u].count && manifest.units[u].name == units[u].name, ConfigError,
              "[ckpt] {}: saved from a different model: unit {} is \"{}\" with {} parameters there, \"{}\" with {} "
              "here ({} vs {}): use the same --model as the saved run",
              path, u, manifest.units[u].name, manifest.units[u].count, units[u].name, units[u].count,
              manifest.model_description, description);
  }
  const std::string& here = model_json;
  const std::string there = model::model_config_json(manifest_model_config(manifest, path));
  ZDP_CHECK(here == there, ConfigError,
            "[ckpt] {}: saved from a different model ({}) than this run's ({}): use the same --model as the saved run",
            path, there, here);
}

}  // namespace zerodp::ckpt
