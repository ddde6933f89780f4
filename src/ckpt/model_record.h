// SPDX-License-Identifier: Apache-2.0
// How a checkpoint records its model: the model config as the JSON of
// model::model_config_json (so offline tools can rebuild the model, or its
// llm.c header, from the manifest alone), and the checks that a manifest
// belongs to a given model.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "model/presets.h"

namespace zerodp::ckpt {

// The manifest's model config (IoError naming `manifest_path` when invalid).
model::ModelConfig manifest_model_config(const Manifest& manifest, const std::string& manifest_path);

// ConfigError naming `manifest_path` and the first difference when the
// manifest was saved from a different model than this run's (its units in
// flat order, one-line description and model::model_config_json): Φ, unit
// names/counts, config.
void check_same_model(const Manifest& manifest, const std::vector<UnitEntry>& units, const std::string& description,
                      const std::string& model_json, const std::string& manifest_path);

}  // namespace zerodp::ckpt
