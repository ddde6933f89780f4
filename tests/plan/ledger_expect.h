// SPDX-License-Identifier: Apache-2.0
// The plan-vs-ledger tests' one comparison of a rank's model states and
// activations: each category's current value and peak equal to plan's.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "plan/engine_memory.h"
#include "zero/memory_ledger.h"

namespace zerodp::plan {

inline void expect_states_and_activations(const zero::LedgerSnapshot& s, const RankPrediction& p) {
  using zero::MemoryCategory;
  auto both = [&](MemoryCategory c, uint64_t expected) {
    EXPECT_EQ(s[c].current, expected) << zero::memory_category_name(c) << " current";
    EXPECT_EQ(s[c].peak, expected) << zero::memory_category_name(c) << " peak";
  };
  both(MemoryCategory::kParams, p.params);
  both(MemoryCategory::kGrads, p.grads);
  both(MemoryCategory::kMaster, p.master);
  both(MemoryCategory::kAdamM, p.adam_m);
  both(MemoryCategory::kAdamV, p.adam_v);
  both(MemoryCategory::kActivations, p.activations);
  both(MemoryCategory::kOffload, p.offload);
  EXPECT_EQ(s.model_states.peak, p.model_states());
}

}  // namespace zerodp::plan
