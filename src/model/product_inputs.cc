// SPDX-License-Identifier: Apache-2.0
#include "model/product_inputs.h"

#include "core/convert.h"
#include "kernels/gemm_bf16.h"

namespace zerodp::model::detail {

void add_product_input(ArenaCarver& carver, std::span<float>& fp32, std::span<BFloat16>& kept, size_t count, bool keep,
                       bool bf16) {
  if (bf16) {
    carver.add(kept, count, true);
  } else {
    carver.add(fp32, count, keep);
  }
}

void keep_product_input(std::span<const float> working, std::span<BFloat16> kept) {
  if (!kept.empty()) kernels::round_to_bf16_operands(working.first(kept.size()), kept);
}

void restore_product_input(std::span<const BFloat16> kept, std::span<float> working) {
  if (!kept.empty()) convert(kept, working.first(kept.size()));
}

}  // namespace zerodp::model::detail
