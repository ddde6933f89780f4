// SPDX-License-Identifier: Apache-2.0
// How a value rounds to a narrower format: to the nearest (ties to even),
// or stochastically (up with probability equal to the remainder, so the
// rounding is unbiased, from counter-based bits: core/counter_hash.h). Two
// layers round this way and name it the same: Lion's bf16 momentum
// (optim/lion.h, --lion-momentum-rounding) and the compressed collectives'
// int8/int4 codes (comm/quantize.h, --quantize-rounding). It lives in core
// because comm may not include optim. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace zerodp {

enum class RoundingMode : uint8_t { kNearest = 0, kStochastic = 1 };
// "nearest", "stochastic"; parse: ConfigError naming both otherwise.
std::string_view rounding_mode_name(RoundingMode mode);
RoundingMode parse_rounding_mode(std::string_view name);

}  // namespace zerodp
