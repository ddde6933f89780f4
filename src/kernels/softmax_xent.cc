// SPDX-License-Identifier: Apache-2.0
#include "kernels/softmax_xent.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> buf, std::span<const int32_t> targets, XentShape s) {
  ZDP_CHECK(s.rows >= 0 && s.vocab > 0 && s.padded >= s.vocab, ShapeError, "[softmax_xent] bad shape N={} V={} Vp={}",
            s.rows, s.vocab, s.padded);
  ZDP_CHECK_EQ(buf.size(), size_t(s.rows) * s.padded, ShapeError, "[softmax_xent] logits size");
  ZDP_CHECK_EQ(targets.size(), size_t(s.rows), ShapeError, "[softmax_xent] targets size");
  for (int32_t t : targets) {
    ZDP_CHECK(t >= 0 && t < s.vocab, ShapeError, "[softmax_xent] target {} outside the vocabulary [0, {})", t, s.vocab);
  }
}

}  // namespace

namespace {

// One row: softmax over [0, V), zero the padding, then optionally turn the
// probabilities into (p - onehot) * dloss; returns the row's loss. The row
// stays in cache across the passes.
template <bool kGrad>
float xent_row(float* row, int32_t target, size_t V, size_t Vp, float dloss) {
  const float m = detail::lane_max(row, V);
  const float target_logit = row[target];
  // exp in place and the sum in the same pass, with the fixed lane order
  const float sum = detail::exp_sum_inplace(row, V, m);
  const float scale = kGrad ? dloss / sum : 1.0f / sum;
  for (size_t i = 0; i < V; ++i) row[i] *= scale;
  for (size_t i = V; i < Vp; ++i) row[i] = 0.0f;
  if (kGrad) row[target] -= dloss;
  // -log softmax from the logits, not log(p): exact for tiny probabilities
  return std::log(sum) - (target_logit - m);
}

template <bool kGrad>
float xent_rows(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets, float dloss,
                XentShape s) {
  check(buf, targets, s);
  ZDP_CHECK_EQ(losses.size(), size_t(s.rows), ShapeError, "[softmax_xent] losses size");
  double total = 0.0;
  for (int i = 0; i < s.rows; ++i) {
    losses[i] = xent_row<kGrad>(buf.data() + size_t(i) * s.padded, targets[i], s.vocab, s.padded, dloss);
    total += losses[i];
  }
  return s.rows > 0 ? static_cast<float>(total / s.rows) : 0.0f;
}

}  // namespace

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
    for (size_t j = 0; j < V; ++j) row[j] *= dloss;
    row[targets[i]] -= dloss;
  }
}

}  // namespace zerodp::kernels
