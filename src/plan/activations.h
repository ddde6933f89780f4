// SPDX-License-Identifier: Apache-2.0
// An estimate of a model's activation memory per rank for one micro-batch,
// as plan's GPT-shape planner asks for it. The lists of tensors are the
// families' own (model/gpt_family.h, model/mlp_family.h: each family's
// ModelSpec::estimate_activations); these wrappers take plan's GptShape and
// an MLP's widths. tests/plan/plan_vs_ledger_test.cc holds the estimates
// and the ledger equal.
// Thread-safety: pure functions.
#pragma once

#include <span>

#include "model/activation_estimate.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

using model::ActivationConfig;
using model::ActivationEstimate;
using model::ActivationTerm;

ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config);

ActivationEstimate estimate_mlp_activations(std::span<const int> widths, const ActivationConfig& config);

}  // namespace zerodp::plan
