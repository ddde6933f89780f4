// SPDX-License-Identifier: Apache-2.0
// The picture of `zerodp plan --chart out.svg`, after the ZeRO paper's
// Figure 1: on the left one replica's model states by category (2Φ params,
// 2Φ grads, KΦ optimizer for mixed-precision Adam), on the right the bytes
// each rank holds at stages 0-3 for every N planned, stacked by category
// (plus the unit buffers, stage 3's gathered units among them, and the
// activations when known), with the
// device memory as a dashed line. Both panels share one GB (1e9 bytes) scale
// so the optimizer block is seen to dominate and then shrink by N.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "plan/planner.h"
#include "report/bar_chart.h"

namespace zerodp::report {

BarChart plan_replica_chart(const plan::PlanResult& result);
BarChart plan_per_rank_chart(const plan::PlanResult& result);

// The two panels side by side in one SVG document.
std::string render_plan_chart(const plan::PlanResult& result);
// IoError when `path` cannot be written.
void save_plan_chart(const plan::PlanResult& result, const std::string& path);

}  // namespace zerodp::report
