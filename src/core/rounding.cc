// SPDX-License-Identifier: Apache-2.0
#include "core/rounding.h"

#include "core/error.h"

namespace zerodp {

std::string_view rounding_mode_name(RoundingMode mode) {
  return mode == RoundingMode::kStochastic ? "stochastic" : "nearest";
}

RoundingMode parse_rounding_mode(std::string_view name) {
  if (name == "nearest") return RoundingMode::kNearest;
  if (name == "stochastic") return RoundingMode::kStochastic;
  ZDP_THROW(ConfigError, "[rounding] unknown rounding '{}'; use nearest or stochastic", name);
}

}  // namespace zerodp
