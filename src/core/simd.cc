// SPDX-License-Identifier: Apache-2.0
#include "core/simd.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace zerodp {
namespace {

constexpr int kUnset = -1;
// The active level as an int (kUnset until first read); an atomic so that
// rank threads may read it while a test's ScopedSimdLevel is not active.
std::atomic<int> g_active{kUnset};

std::string names_of(const std::vector<SimdLevel>& levels) {
  std::string out;
  for (SimdLevel l : levels) out += (out.empty() ? "" : ", ") + std::string(simd_level_name(l));
  return out;
}

}  // namespace

SimdLevel resolve_simd_level(std::string_view requested) {
  if (requested.empty()) return best_simd_level();
  const std::string value(requested);
  const std::optional<SimdLevel> level = parse_simd_level(value);
  if (!level) {
    ZDP_THROW(ConfigError, "[simd] ZERODP_SIMD={} is not a level; use one of: {} (or unset it for the best, {})", value,
              names_of(supported_simd_levels()), simd_level_name(best_simd_level()));
  }
  const std::vector<SimdLevel> built = built_simd_levels();
  if (std::find(built.begin(), built.end(), *level) == built.end()) {
    ZDP_THROW(ConfigError,
              "[simd] ZERODP_SIMD={}: this build has no {} code (it has: {}); unset it or use one of those", value,
              value, names_of(supported_simd_levels()));
  }
  if (!simd_detail::cpu_runs(*level)) {
    ZDP_THROW(ConfigError, "[simd] ZERODP_SIMD={}: this CPU lacks the {} instructions; use one of: {}", value, value,
              names_of(supported_simd_levels()));
  }
  return *level;
}

std::vector<SimdLevel> built_simd_levels() { return simd_detail::arch_levels(); }

SimdLevel best_simd_level() {
  static const SimdLevel best = [] {
    SimdLevel level = SimdLevel::kScalar;
    for (SimdLevel l : built_simd_levels()) {
      if (simd_detail::cpu_runs(l)) level = l;
    }
    return level;
  }();
  return best;
}

std::vector<SimdLevel> supported_simd_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : built_simd_levels()) {
    if (simd_detail::cpu_runs(l)) levels.push_back(l);
  }
  return levels;
}

SimdLevel active_simd_level() {
  const int active = g_active.load(std::memory_order_relaxed);
  if (active != kUnset) return static_cast<SimdLevel>(active);
  const char* requested = std::getenv("ZERODP_SIMD");
  // Throws on a bad ZERODP_SIMD, on every call until it is fixed.
  const SimdLevel level = resolve_simd_level(requested == nullptr ? "" : requested);
  g_active.store(static_cast<int>(level), std::memory_order_relaxed);
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return "scalar";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kNeon:
      return "neon";
    case SimdLevel::kAvx512Bf16:
      return "avx512bf16";
  }
  return "?";
}
int simd_height(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return 0;
    case SimdLevel::kAvx2:
    case SimdLevel::kNeon:
      return 1;
    case SimdLevel::kAvx512:
      return 2;
    case SimdLevel::kAvx512Bf16:
      return 3;
  }
  return 0;
}

std::optional<SimdLevel> parse_simd_level(std::string_view name) {
  for (SimdLevel l :
       {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16, SimdLevel::kNeon}) {
    if (name == simd_level_name(l)) return l;
  }
  return std::nullopt;
}

ScopedSimdLevel::ScopedSimdLevel(SimdLevel level) : previous_(active_simd_level()) {
  const std::vector<SimdLevel> ok = supported_simd_levels();
  ZDP_CHECK(std::find(ok.begin(), ok.end(), level) != ok.end(), ConfigError,
            "[simd] level {} is not supported here (supported: {})", simd_level_name(level), names_of(ok));
  g_active.store(static_cast<int>(level), std::memory_order_relaxed);
}

ScopedSimdLevel::~ScopedSimdLevel() { g_active.store(static_cast<int>(previous_), std::memory_order_relaxed); }

}  // namespace zerodp
