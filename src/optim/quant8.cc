// SPDX-License-Identifier: Apache-2.0
#include "optim/quant8.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/error.h"
#include "optim/dynamic_map_table.h"

namespace zerodp::optim::quant8 {
namespace {

DynamicMap make_map(const std::array<float, 256>& code, bool is_signed) {
  DynamicMap m{};
  m.code = code;
  m.is_signed = is_signed;
  for (size_t k = 0; k + 1 < code.size(); ++k) {
    m.mid[k] = static_cast<float>((static_cast<double>(code[k]) + static_cast<double>(code[k + 1])) / 2.0);
  }
  for (size_t k = 0; k < code.size(); ++k) {
    if (code[k] == 0.0f) m.zero = static_cast<uint8_t>(k);
  }
  // The vector quantizer reads a code's sign from its index: negative below
  // zero, +0 and positive from it.
  for (size_t k = 0; k < code.size(); ++k) {
    ZDP_CHECK(std::signbit(code[k]) == (k < m.zero), Error,
              "[quant8] code {} ({}) of the dynamic map is out of order (internal: dynamic_map_table.h)", k, code[k]);
  }
  // For the floats with top bits i, the smallest one (by value) gives the
  // smallest answer: the lowest bits for a positive float, the highest for a
  // negative one (NaN patterns included; quantize never sees them).
  auto count_below = [&m](float x) {
    unsigned q = 0;
    for (unsigned step = 128; step > 0; step >>= 1) q += step * static_cast<unsigned>(x > m.mid[q + step - 1]);
    return static_cast<uint8_t>(q);
  };
  constexpr uint32_t kLow = 32 - kIndexBits;
  m.max_steps = 0;
  for (uint32_t i = 0; i < kFirstEntries; ++i) {
    const bool negative = (i >> (kIndexBits - 1)) != 0;
    const uint32_t low = negative ? (i << kLow) | ((1u << kLow) - 1) : i << kLow;
    m.first[i] = count_below(std::bit_cast<float>(low));
    // The largest of them by value: the other end of the bucket. NaN and
    // infinite buckets (exponent all ones) are never quantized.
    const uint32_t high = negative ? i << kLow : (i << kLow) | ((1u << kLow) - 1);
    if (((i >> (kIndexBits - 9)) & 0xFFu) != 0xFFu) {
      const unsigned steps = count_below(std::bit_cast<float>(high)) - m.first[i];
      m.max_steps = static_cast<uint8_t>(std::max<unsigned>(m.max_steps, steps));
    }
  }
  return m;
}

}  // namespace

const DynamicMap& signed_map() {
  static const DynamicMap map = make_map(kSignedDynamicMap, true);
  return map;
}

const DynamicMap& unsigned_map() {
  static const DynamicMap map = make_map(kUnsignedDynamicMap, false);
  return map;
}

}  // namespace zerodp::optim::quant8
