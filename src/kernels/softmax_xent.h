// SPDX-License-Identifier: Apache-2.0
// Fused softmax + cross-entropy over the first `vocab` of `padded` columns
// (llm.c pads GPT-2's vocabulary 50257 to 50304; padded columns get
// probability 0 and gradient 0). A target of kIgnoreTarget (-1, PyTorch's
// ignore_index) masks its row: loss 0, gradient 0. The loss is the mean over
// the unmasked rows (0 when every row is masked).
// Both passes work in place on one [N, padded] buffer: logits -> probs in
// forward, probs -> d(logits) in backward, so the largest activation of a GPT
// (B*T*Vp) exists once.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <span>

namespace zerodp::kernels {

// The target id that means "no loss at this position" (supervised
// fine-tuning masks the prompt's targets with it).
inline constexpr int32_t kIgnoreTarget = -1;

struct XentShape {
  int rows = 0;    // N = B*T
  int vocab = 0;   // V: real classes
  int padded = 0;  // Vp >= V: row stride
};

// buf[N,Vp]: logits in, probabilities out; losses[N] = -log p[target].
// Returns the mean loss over the unmasked rows (summed in double, in row
// order; 0 when all are masked). Targets must lie in [0, V) or be
// kIgnoreTarget (ShapeError otherwise); a masked row's loss is 0 and its
// probabilities are still computed.
float softmax_xent_forward(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets,
                           XentShape s);

// buf[N,Vp]: probabilities in, d(logits) out = (p - onehot(target)) * dloss,
// where dloss is d(total objective)/d(each row's loss), e.g. scale / M for a
// mean over M unmasked rows; a masked row's d(logits) is 0.
void softmax_xent_backward(std::span<float> buf, std::span<const int32_t> targets, float dloss, XentShape s);

// Forward and backward in one pass over each row, for a caller that will run
// backward anyway (the GPT's LM head): buf[N,Vp] logits in, d(logits) out =
// (p - onehot(target)) * dloss, where dloss is the gradient of the objective
// per row's loss when the caller's later scale is 1 (1/M for a mean over M
// unmasked rows; masked rows get 0, count them with unmasked_rows). The
// caller applies its final scale as the alpha of the GEMMs that consume the
// result, so no pass over the [N, Vp] buffer is left for backward. Returns
// the mean loss, as softmax_xent_forward; the probabilities are not kept.
float softmax_xent_fused(std::span<float> buf, std::span<float> losses, std::span<const int32_t> targets, float dloss,
                         XentShape s);

// The number of targets that are not kIgnoreTarget.
int unmasked_rows(std::span<const int32_t> targets);

// d(mean loss)/d(each row's loss) over `unmasked` rows: 1/unmasked, and 0
// when every row is masked (the loss is then 0, its gradient 0, no NaN).
inline float mean_dloss(int unmasked) { return unmasked > 0 ? 1.0f / static_cast<float>(unmasked) : 0.0f; }

}  // namespace zerodp::kernels
