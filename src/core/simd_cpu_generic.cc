// SPDX-License-Identifier: Apache-2.0
// Any other architecture: the portable loops only.
#include "core/simd.h"

namespace zerodp::simd_detail {

std::vector<SimdLevel> arch_levels() { return {SimdLevel::kScalar}; }

bool cpu_runs(SimdLevel level) { return level == SimdLevel::kScalar; }

}  // namespace zerodp::simd_detail
