// SPDX-License-Identifier: Apache-2.0
// Test support: run a test suite at every SIMD level this CPU and build
// support (core/simd.h). A fixture derived from AtEverySimdLevel makes its
// parameter the active level for the test's duration, so code that takes
// the default level runs that level's files.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/simd.h"

namespace zerodp::testing {

class AtEverySimdLevel : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override { forced_.emplace(GetParam()); }
  void TearDown() override { forced_.reset(); }

 private:
  std::optional<ScopedSimdLevel> forced_;
};

// Test-name suffix: the level's name ("scalar", "avx2", ...).
inline std::string simd_level_param_name(const ::testing::TestParamInfo<SimdLevel>& info) {
  return simd_level_name(info.param);
}

}  // namespace zerodp::testing

// INSTANTIATE_AT_EVERY_SIMD_LEVEL(Fixture): one instance per supported level.
#define INSTANTIATE_AT_EVERY_SIMD_LEVEL(Fixture)                                                    \
  INSTANTIATE_TEST_SUITE_P(Levels, Fixture, ::testing::ValuesIn(::zerodp::supported_simd_levels()), \
                           ::zerodp::testing::simd_level_param_name)
