// SPDX-License-Identifier: Apache-2.0
#include "weights/model_record.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::weights {

model::ModelConfig model_config_from_record(const std::string& model_json, const std::string& path) {
  try {
    return model::model_config_from_json(model_json);
  } catch (const ConfigError& e) {
    ZDP_THROW(InputFileError, "[ckpt] {}: the recorded model is not valid: {}", path, e.message());
  }
}

model::ModelConfig manifest_model_config(const ckpt::Manifest& manifest, const std::string& path) {
  return model_config_from_record(manifest.model_json, path);
}

void check_same_model_config(const std::string& saved_model_json, const std::string& model_json,
                             const std::string& path) {
  const std::string& here = model_json;
  const std::string there = model::model_config_json(model_config_from_record(saved_model_json, path));
  ZDP_CHECK(here == there, ConfigError,
            "[ckpt] {}: saved from a different model ({}) than this run's ({}): use the same --model as the saved run",
            path, there, here);
}

}  // namespace zerodp::weights
