// SPDX-License-Identifier: Apache-2.0
// The MLP family ("kind": "mlp"): its spec, schema, presets and planner
// facts, registered with model/family.h as a built-in family.
//
// Presets:
//   mlp-small   [64, 256, 256, 10], classification
//   mlp-10m     [1024, 1536 x4, 1024], regression (~10M)
// Schema: {"kind": "mlp", "widths": [in, hidden..., out],
//   "head": "classification" | "regression" (default)}.
// Activations (estimate_activations, B = micro-batch, fp32, unaligned):
// the input features, each layer's output (and its GELU output but for the
// last), the targets, the losses and the labels, then each layer's output
// gradients as backward scratch.
// Thread-safety: immutable values and pure functions.
#pragma once

#include "model/family.h"
#include "model/mlp.h"

namespace zerodp::model {

class MlpSpec final : public ModelSpec {
 public:
  explicit MlpSpec(MlpConfig config);  // validates

  std::string kind() const override { return "mlp"; }
  nlohmann::ordered_json to_json() const override;
  std::unique_ptr<Model> build() const override;
  size_t num_params() const override;
  std::string describe() const override;
  std::optional<ActivationEstimate> estimate_activations(const ActivationConfig& config) const override;

  const MlpConfig& config() const { return config_; }

 private:
  MlpConfig config_;
};

Family mlp_family();

}  // namespace zerodp::model
