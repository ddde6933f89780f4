// SPDX-License-Identifier: Apache-2.0
// Bit-for-bit comparison of float results (the design's bitwise promises:
// -0.0 differs from 0.0 and a NaN equals the same NaN), and substring match
// for error messages.
#pragma once

#include <cstring>
#include <string_view>
#include <vector>

namespace zerodp::testing {

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace zerodp::testing
