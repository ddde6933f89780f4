// SPDX-License-Identifier: Apache-2.0
// How a PlanResult is shown: a text report (tables per N with bytes in GB =
// 1e9, as the ZeRO paper, and GiB = 2^30, each labelled) and a JSON document
// with every number in bytes or elements, for machines.
// Thread-safety: all functions are pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "plan/planner.h"

namespace zerodp::plan {

struct FormatOptions {
  bool compare_deepspeed = false;    // add DeepSpeed's estimator lines
  bool activation_breakdown = true;  // list each activation tensor
};

std::string format_plan_text(const PlanResult& result, const FormatOptions& options = {});

// Keys: config, bytes_per_param, largest_unit_params, activations, plans[] with
// per-stage bytes by category, comm, fits, max_params, recommended, deepspeed.
nlohmann::json plan_to_json(const PlanResult& result, const FormatOptions& options = {});

// "bf16 + AdamW, mixed precision" style description of precision x optimizer.
std::string describe_training(const PlanConfig& config);

// "params 2 + grads 2 + optimizer K = 12 (fp32 master 4 + Adam m 4 + Adam v 4) = 16".
std::string describe_bytes_per_param(const BytesPerParam& bpp, const optim::OptimizerConfig& optimizer);

}  // namespace zerodp::plan
