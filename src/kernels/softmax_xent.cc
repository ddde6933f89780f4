// SPDX-License-Identifier: Apache-2.0
#include "kernels/softmax_xent.h"

#include <algorithm>
#include <cstddef>

#include "core/error.h"
#include "kernels/model_kernels.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> buf, std::span<const int32_t> targets, XentShape s) {
  ZDP_CHECK(s.rows >= 0 && s.vocab > 0 && s.padded >= s.vocab, ShapeError, "[softmax_xent] bad shape N={} V={} Vp={}",
            s.rows, s.vocab, s.padded);
  ZDP_CHECK_EQ(buf.size(), size_t(s.rows) * s.padded, ShapeError, "[softmax_xent] logits size");
  ZDP_CHECK_EQ(targets.size(), size_t(s.rows), ShapeError, "[softmax_xent] targets size");
  for (int32_t t : targets) {
    ZDP_CHECK(t == kIgnoreTarget || (t >= 0 && t < s.vocab), ShapeError,
              "[softmax_xent] target {} outside the vocabulary [0, {}) and not the ignore id {}", t, s.vocab,
              kIgnoreTarget);
  }
}

template <bool kGrad>
float xent_rows(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets, float dloss,
                XentShape s) {
  check(buf, targets, s);
  ZDP_CHECK_EQ(losses.size(), size_t(s.rows), ShapeError, "[softmax_xent] losses size");
  const ModelKernelSet& k = model_kernel_set();
  const double total = (kGrad ? k.xent_rows_grad : k.xent_rows)(
      buf.data(), losses.data(), targets.data(), size_t(s.rows), size_t(s.vocab), size_t(s.padded), dloss);
  const int counted = unmasked_rows(targets);
  return counted > 0 ? static_cast<float>(total / counted) : 0.0f;
}

}  // namespace

int unmasked_rows(std::span<const int32_t> targets) {
  return static_cast<int>(std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t != kIgnoreTarget; }));
}

float softmax_xent_forward(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets,
                           XentShape s) {
  return xent_rows<false>(buf, losses, targets, 0.0f, s);
}

float softmax_xent_fused(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets, float dloss,
                         XentShape s) {
  return xent_rows<true>(buf, losses, targets, dloss, s);
}

void softmax_xent_backward(std::span<float> buf, std::span<const int32_t> targets, float dloss, XentShape s) {
  check(buf, targets, s);
  const size_t V = s.vocab;
  for (int i = 0; i < s.rows; ++i) {
    float* row = buf.data() + size_t(i) * s.padded;
    if (targets[i] == kIgnoreTarget) {
      std::fill_n(row, V, 0.0f);
      continue;
    }
    for (size_t j = 0; j < V; ++j) row[j] *= dloss;
    row[targets[i]] -= dloss;
  }
}

}  // namespace zerodp::kernels
