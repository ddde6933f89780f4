// SPDX-License-Identifier: Apache-2.0
// Model configs by name or from JSON, and the factory that builds a Model,
// over every registered family (model/family.h): the GPT family's presets
// and schema are in model/gpt_family.h, the MLP's in model/mlp_family.h.
// JSON (a file whose name ends in .json, or an inline object) names its
// family with "kind": {"kind": "gpt", "layers": 6, ...}.
// This is the one preset list and the one model schema: `zerodp plan
// --model`, `zerodp model list` and `zerodp train --model` read both from
// here. zerodp plan's former spelling "type" is refused naming "kind".
// Unknown names, unknown keys and bad values are ConfigErrors that say what
// is accepted. Thread-safety: as the family registry (model/family.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/family.h"
#include "model/model.h"

namespace zerodp::model {

inline constexpr std::string_view kDefaultModel = "gpt-tiny";

// Every family's presets, family by family.
std::vector<std::string> model_preset_names();
ModelConfig model_preset(std::string_view name);
// Parses a JSON object (text) into a validated config of the family its
// "kind" names.
ModelConfig model_config_from_json(std::string_view json_text);
// The inverse: the family's schema, compact, "kind" first (the name is not
// recorded). Checkpoint manifests record a model this way.
std::string model_config_json(const ModelConfig& config);
// A preset name, a path ending in .json, or an inline JSON object ("{...}").
ModelConfig resolve_model_config(std::string_view name_or_json);

std::unique_ptr<Model> make_model(const ModelConfig& config);
size_t num_params(const ModelConfig& config);

}  // namespace zerodp::model
