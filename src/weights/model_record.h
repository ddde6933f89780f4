// SPDX-License-Identifier: Apache-2.0
// How a checkpoint records its model: the model config as the JSON of
// model::model_config_json (so offline tools can rebuild the model, or its
// llm.c header, from the manifest alone), and the checks that a manifest
// belongs to a given model.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "ckpt/manifest.h"
#include "model/presets.h"

namespace zerodp::weights {

// The model config a checkpoint recorded (InputFileError naming `path`, the
// manifest, when it is not a valid model).
model::ModelConfig model_config_from_record(const std::string& model_json, const std::string& path);
model::ModelConfig manifest_model_config(const ckpt::Manifest& manifest, const std::string& manifest_path);

// ConfigError naming `manifest_path` when the saved model config differs from
// this run's (model::model_config_json of each, compared as written; the
// units were compared by ckpt::load before).
void check_same_model_config(const std::string& saved_model_json, const std::string& model_json,
                             const std::string& manifest_path);

}  // namespace zerodp::weights
