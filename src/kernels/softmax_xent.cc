#include "kernels/softmax_xent.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> buf, std::span<const int32_t> targets, XentShape s) {
  ZDP_CHECK(s.rows >= 0 && s.vocab > 0 && s.padded >= s.vocab, ShapeError,
            "[softmax_xent] bad shape N={} V={} Vp={}", s.rows, s.vocab, s.padded);
  ZDP_CHECK_EQ(buf.size(), size_t(s.rows) * s.padded, ShapeError, "[softmax_xent] logits size");
  ZDP_CHECK_EQ(targets.size(), size_t(s.rows), ShapeError, "[softmax_xent] targets size");
  for (int32_t t : targets) {
    ZDP_CHECK(t >= 0 && t < s.vocab, ShapeError, "[softmax_xent] target {} outside the vocabulary [0, {})",
              t, s.vocab);
  }
}

}  // namespace

float softmax_xent_forward(std::span<float> buf, std::span<float> losses,
                           std::span<const int32_t> targets, XentShape s) {
  check(buf, targets, s);
  ZDP_CHECK_EQ(losses.size(), size_t(s.rows), ShapeError, "[softmax_xent] losses size");
  const size_t V = s.vocab;
  double total = 0.0;
  for (int i = 0; i < s.rows; ++i) {
    float* row = buf.data() + size_t(i) * s.padded;  // [Vp]
    const float m = detail::lane_max(row, V);
    const float target_logit = row[targets[i]];
    // exp in place, then the sum with fixed lane order
    for (size_t j = 0; j < V; ++j) row[j] = detail::fast_exp(row[j] - m);
    const float sum = detail::lane_sum(row, V);
    const float inv = 1.0f / sum;
    for (size_t j = 0; j < V; ++j) row[j] *= inv;
    for (size_t j = V; j < size_t(s.padded); ++j) row[j] = 0.0f;
    // -log softmax from the logits, not log(p): exact for tiny probabilities
    losses[i] = std::log(sum) - (target_logit - m);
    total += losses[i];
  }
  return s.rows > 0 ? static_cast<float>(total / s.rows) : 0.0f;
}

void softmax_xent_backward(std::span<float> buf, std::span<const int32_t> targets, float dloss,
                           XentShape s) {
  check(buf, targets, s);
  const size_t V = s.vocab;
  for (int i = 0; i < s.rows; ++i) {
    float* row = buf.data() + size_t(i) * s.padded;
    for (size_t j = 0; j < V; ++j) row[j] *= dloss;
    row[targets[i]] -= dloss;
  }
}

}  // namespace zerodp::kernels
