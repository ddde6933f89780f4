// SPDX-License-Identifier: Apache-2.0
// The kinds of model zerodp builds, and their names in the model schema
// ("kind" in model/presets.h's JSON, Model::kind(), a checkpoint manifest's
// "model_kind"). In core, the vocabulary every layer shares, so that ckpt's
// manifest records a kind without depending on the model layer.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace zerodp {

enum class ModelKind { kGpt, kMlp };

// "gpt" or "mlp".
constexpr std::string_view model_kind_name(ModelKind kind) { return kind == ModelKind::kGpt ? "gpt" : "mlp"; }

// The kind named `name` exactly ("gpt" or "mlp"), or nullopt.
constexpr std::optional<ModelKind> find_model_kind(std::string_view name) {
  if (name == "gpt") return ModelKind::kGpt;
  if (name == "mlp") return ModelKind::kMlp;
  return std::nullopt;
}

}  // namespace zerodp
