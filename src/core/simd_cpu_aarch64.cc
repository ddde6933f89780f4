// SPDX-License-Identifier: Apache-2.0
// aarch64: Advanced SIMD (NEON) is part of the base architecture (ARMv8-A),
// so every aarch64 CPU runs the neon level.
#include "core/simd.h"

namespace zerodp::simd_detail {

std::vector<SimdLevel> arch_levels() { return {SimdLevel::kScalar, SimdLevel::kNeon}; }

bool cpu_runs(SimdLevel level) { return level == SimdLevel::kScalar || level == SimdLevel::kNeon; }

}  // namespace zerodp::simd_detail
