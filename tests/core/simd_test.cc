// SPDX-License-Identifier: Apache-2.0
// The SIMD level vocabulary: names, the best and supported levels, the
// ZERODP_SIMD rules, and the scoped override the level tests use.
#include "core/simd.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"

namespace zerodp {
namespace {

TEST(Simd, NamesRoundTrip) {
  for (SimdLevel l :
       {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16, SimdLevel::kNeon}) {
    EXPECT_EQ(parse_simd_level(simd_level_name(l)), l);
  }
  EXPECT_FALSE(parse_simd_level("AVX2").has_value());
  EXPECT_FALSE(parse_simd_level("sse").has_value());
}

TEST(Simd, ByLevelRunsTheHighestEntryAtOrBelowTheLevel) {
  const auto pick = [](SimdLevel level) {
    return by_level<int>(level, {{SimdLevel::kScalar, 0}, {SimdLevel::kAvx512, 2}, {SimdLevel::kAvx2, 1}});
  };
  EXPECT_EQ(pick(SimdLevel::kScalar), 0);
  EXPECT_EQ(pick(SimdLevel::kAvx2), 1);
  EXPECT_EQ(pick(SimdLevel::kAvx512), 2);
  EXPECT_EQ(pick(SimdLevel::kAvx512Bf16), 2);  // a module without bf16 files runs its avx512 ones
  EXPECT_EQ(by_level<int>(SimdLevel::kAvx512Bf16, {{SimdLevel::kScalar, 0}}), 0);
  EXPECT_EQ(by_level<int>(SimdLevel::kNeon, {{SimdLevel::kScalar, 0}, {SimdLevel::kNeon, 3}}), 3);
}

TEST(Simd, SupportedLevelsStartWithScalarAndEndWithTheBest) {
  const std::vector<SimdLevel> levels = supported_simd_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), SimdLevel::kScalar);
  EXPECT_EQ(levels.back(), best_simd_level());
  const std::vector<SimdLevel> built = built_simd_levels();
  for (SimdLevel l : levels) EXPECT_NE(std::find(built.begin(), built.end(), l), built.end());
}

TEST(Simd, ResolveTakesEverySupportedLevelAndTheEmptyName) {
  EXPECT_EQ(resolve_simd_level(""), best_simd_level());
  for (SimdLevel l : supported_simd_levels()) EXPECT_EQ(resolve_simd_level(simd_level_name(l)), l);
}

TEST(Simd, ResolveRefusesUnknownAndUnavailableLevelsInOneLine) {
  try {
    resolve_simd_level("avx9");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("ZERODP_SIMD=avx9 is not a level; use one of: scalar"), std::string::npos)
        << e.message();
    EXPECT_EQ(e.message().find('\n'), std::string::npos);
  }
  // A level of the other architecture is never available.
  const SimdLevel foreign = built_simd_levels().back() == SimdLevel::kNeon ? SimdLevel::kAvx2 : SimdLevel::kNeon;
  try {
    resolve_simd_level(simd_level_name(foreign));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("this build has no"), std::string::npos) << e.message();
  }
}

TEST(Simd, ScopedLevelSetsAndRestoresTheActiveLevel) {
  const SimdLevel before = active_simd_level();
  {
    ScopedSimdLevel forced(SimdLevel::kScalar);
    EXPECT_EQ(active_simd_level(), SimdLevel::kScalar);
  }
  EXPECT_EQ(active_simd_level(), before);
  EXPECT_THROW(ScopedSimdLevel(static_cast<SimdLevel>(99)), ConfigError);
}

}  // namespace
}  // namespace zerodp
