// SPDX-License-Identifier: Apache-2.0
// Ignored targets (-1) in the softmax cross-entropy: the loss is the mean
// over the unmasked rows, masked rows get zero gradient, an all-masked batch
// gives loss 0 and zero gradients; a finite-difference check with some rows
// masked; every SIMD level gives the scalar level's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/simd.h"
#include "gradcheck.h"
#include "kernels/model_kernels.h"
#include "kernels/softmax_xent.h"

namespace zerodp::kernels {
namespace {

using testing::grad_check;
using testing::random_vector;

// Three rows of three classes, written down; the middle row is masked.
// Row 0: logits (0, ln 2, ln 5), target 2: p = 5/8, loss = ln(8/5).
// Row 2: logits (ln 3, 0, 0), target 1: p = 1/5, loss = ln 5.
TEST(MaskedXent, LossIsTheMeanOverUnmaskedRowsByHand) {
  const XentShape s{3, 3, 4};
  const float l2 = std::log(2.0f), l3 = std::log(3.0f), l5 = std::log(5.0f);
  const std::vector<float> logits{0.0f, l2, l5, 9.0f, 1.0f, 2.0f, 3.0f, 9.0f, l3, 0.0f, 0.0f, 9.0f};
  const std::vector<int32_t> targets{2, kIgnoreTarget, 1};
  std::vector<float> buf = logits, losses(3);
  const float loss = softmax_xent_forward(buf, losses, targets, s);
  const double want = (std::log(8.0 / 5.0) + std::log(5.0)) / 2.0;
  EXPECT_NEAR(loss, want, 1e-6);
  EXPECT_NEAR(losses[0], std::log(8.0 / 5.0), 1e-6);
  EXPECT_EQ(losses[1], 0.0f);
  EXPECT_NEAR(losses[2], std::log(5.0), 1e-6);
  EXPECT_EQ(unmasked_rows(targets), 2);

  // Fused: (p - onehot) / 2 on the unmasked rows, zeros on the masked one.
  std::vector<float> fused = logits, l2s(3);
  EXPECT_EQ(softmax_xent_fused(fused, l2s, targets, mean_dloss(2), s), loss);
  const std::vector<float> want_grad{1.0f / 16, 2.0f / 16, (5.0f / 8 - 1) / 2, 0,         0, 0, 0,
                                     0,         3.0f / 10, (1.0f / 5 - 1) / 2, 1.0f / 10, 0};
  for (size_t i = 0; i < want_grad.size(); ++i) EXPECT_NEAR(fused[i], want_grad[i], 1e-6) << i;
  // The two-pass form agrees.
  softmax_xent_backward(buf, targets, mean_dloss(2), s);
  for (size_t i = 0; i < want_grad.size(); ++i) EXPECT_NEAR(buf[i], want_grad[i], 1e-6) << i;
}

TEST(MaskedXent, EveryRowMaskedGivesZeroLossAndZeroGradient) {
  const XentShape s{4, 7, 8};
  const auto logits = random_vector(size_t(s.rows) * s.padded, 5, -3.0f, 3.0f);
  const std::vector<int32_t> targets(s.rows, kIgnoreTarget);
  EXPECT_EQ(unmasked_rows(targets), 0);
  EXPECT_EQ(mean_dloss(0), 0.0f);
  std::vector<float> buf = logits, losses(s.rows, 7.0f);
  EXPECT_EQ(softmax_xent_fused(buf, losses, targets, mean_dloss(0), s), 0.0f);
  for (float v : buf) EXPECT_EQ(v, 0.0f);
  for (float v : losses) EXPECT_EQ(v, 0.0f);
  buf = logits;
  EXPECT_EQ(softmax_xent_forward(buf, losses, targets, s), 0.0f);
  softmax_xent_backward(buf, targets, mean_dloss(0), s);
  for (float v : buf) EXPECT_FALSE(std::isnan(v));
}

TEST(MaskedXent, GradCheckWithMaskedRows) {
  const XentShape s{7, 11, 16};
  auto logits = random_vector(size_t(s.rows) * s.padded, 2, -3.0f, 3.0f);
  const std::vector<int32_t> targets{0, kIgnoreTarget, 3, kIgnoreTarget, kIgnoreTarget, 10, 1};
  std::vector<float> buf(logits.size()), losses(s.rows);
  auto f = [&] {
    buf = logits;
    return double(softmax_xent_forward(buf, losses, targets, s));
  };
  buf = logits;
  softmax_xent_fused(buf, losses, targets, mean_dloss(unmasked_rows(targets)), s);
  const std::vector<float> grad = buf;
  for (int i : {1, 3, 4}) {
    for (int j = 0; j < s.padded; ++j) EXPECT_EQ(grad[size_t(i) * s.padded + j], 0.0f);
  }
  const testing::GradCheckResult r = grad_check(logits, grad, f, 112);
  EXPECT_GT(r.checked, 0);
  EXPECT_EQ(r.failed, 0) << r.first_failure;
}

TEST(MaskedXent, RefusesTargetsBelowTheIgnoreId) {
  const XentShape s{2, 3, 3};
  std::vector<float> buf(6), losses(2);
  const std::vector<int32_t> bad{0, -2};
  EXPECT_THROW(softmax_xent_forward(buf, losses, bad, s), ShapeError);
}

TEST(MaskedXent, EverySimdLevelGivesTheScalarBits) {
  const XentShape s{6, 37, 48};
  const auto logits = random_vector(size_t(s.rows) * s.padded, 9, -4.0f, 4.0f);
  const std::vector<int32_t> targets{5, kIgnoreTarget, 36, 0, kIgnoreTarget, 17};
  auto run = [&](const ModelKernelSet& k, bool grad) {
    std::vector<float> buf = logits, losses(s.rows);
    const double total = (grad ? k.xent_rows_grad : k.xent_rows)(buf.data(), losses.data(), targets.data(), s.rows,
                                                                 s.vocab, s.padded, 0.25f);
    buf.push_back(static_cast<float>(total));
    return buf;
  };
  for (SimdLevel level : supported_simd_levels()) {
    for (bool grad : {false, true}) {
      EXPECT_EQ(run(model_kernel_set(level), grad), run(kScalarModelKernels, grad)) << simd_level_name(level);
    }
  }
}

}  // namespace
}  // namespace zerodp::kernels
