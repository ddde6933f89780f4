// SPDX-License-Identifier: Apache-2.0
#include "plan/activations.h"

#include <vector>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/mlp_family.h"

namespace zerodp::plan {

ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config) {
  shape.validate();
  const model::GptSpec spec({shape.context, shape.vocab, shape.vocab, shape.layers, shape.heads, shape.channels});
  return *spec.estimate_activations(config);
}

ActivationEstimate estimate_mlp_activations(std::span<const int> widths, const ActivationConfig& config) {
  ZDP_CHECK(widths.size() >= 2, ConfigError, "[plan] an MLP needs at least [in, out] widths, got {}", widths.size());
  for (int w : widths) ZDP_CHECK(w >= 1, ConfigError, "[plan] MLP width {} must be at least 1", w);
  ActivationConfig c = config;
  c.checkpointing = false;
  const model::MlpSpec spec({std::vector<int>(widths.begin(), widths.end()), model::MlpHead::kRegression});
  return *spec.estimate_activations(c);
}

}  // namespace zerodp::plan
