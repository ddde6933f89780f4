// SPDX-License-Identifier: Apache-2.0
// Fused softmax + cross-entropy over the first `vocab` of `padded` columns
// (llm.c pads GPT-2's vocabulary 50257 to 50304; padded columns get
// probability 0 and gradient 0). Loss is the mean over the N rows.
// Both passes work in place on one [N, padded] buffer: logits -> probs in
// forward, probs -> d(logits) in backward, so the largest activation of a GPT
// (B*T*Vp) exists once.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <span>

namespace zerodp::kernels {

struct XentShape {
  int rows = 0;    // N = B*T
  int vocab = 0;   // V: real classes
  int padded = 0;  // Vp >= V: row stride
};

// buf[N,Vp]: logits in, probabilities out; losses[N] = -log p[target].
// Returns the mean loss (summed in double, in row order). Targets must lie in
// [0, V) (ShapeError otherwise).
float softmax_xent_forward(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets,
                           XentShape s);

// buf[N,Vp]: probabilities in, d(logits) out = (p - onehot(target)) * dloss,
// where dloss is d(total objective)/d(each row's loss), e.g. scale / N for a mean.
void softmax_xent_backward(std::span<float> buf, std::span<const int32_t> targets, float dloss, XentShape s);

// Forward and backward in one pass over each row, for a caller that will run
// backward anyway (the GPT's LM head): buf[N,Vp] logits in, d(logits) out =
// (p - onehot(target)) * dloss, where dloss is the gradient of the objective
// per row's loss when the caller's later scale is 1 (1/N for a mean). The
// caller applies its final scale as the alpha of the GEMMs that consume the
// result, so no pass over the [N, Vp] buffer is left for backward. Returns
// the mean loss, as softmax_xent_forward; the probabilities are not kept.
float softmax_xent_fused(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets, float dloss,
                         XentShape s);

}  // namespace zerodp::kernels
