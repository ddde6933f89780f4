// SPDX-License-Identifier: Apache-2.0
#include "optim/quant8.h"

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
