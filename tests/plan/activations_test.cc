// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/activations.h"

namespace zerodp::plan {
namespace {

uint64_t sum_role(const ActivationEstimate& e, const std::string& role) {
  uint64_t total = 0;
  for (const auto& t : e.terms) total += t.role == role ? t.bytes : 0;
  return total;
}

TEST(Activations, HandCountedSmallGpt) {
  // L=2, H=2, C=8, V=16, T=4, B=3, fp32, no checkpointing, no scratch.
  const GptShape s{2, 2, 8, 16, 4};
  ActivationConfig cfg;
  cfg.micro_batch = 3;
  cfg.include_backward_scratch = false;
  cfg.align_elements = 1;
  const ActivationEstimate e = estimate_activations(s, cfg);
  EXPECT_EQ(e.config.seq_len, 4);  // defaults to the context
  const uint64_t b = 3, t = 4, c = 8, h = 2, v = 16, l = 2;
  const uint64_t btc = b * t * c;
  // per block: ln1 C + 2 + qkv 3C + attn out C + resid C + ln2 C + 2 + fc 4C + gelu 4C + out C (per token)
  const uint64_t per_block = btc * (1 + 3 + 1 + 1 + 1 + 4 + 4 + 1) + 4 * b * t + b * h * t * t;
  const uint64_t once = btc /*embedding*/ + btc + 2 * b * t /*lnf*/ + b * t * v /*logits*/ + b * t /*losses*/;
  EXPECT_EQ(e.total_bytes, 4 * (once + l * per_block));
  EXPECT_EQ(sum_role(e, "kept"), e.total_bytes);
}

TEST(Activations, CheckpointingKeepsBlockOutputsAndOneBlock) {
  const GptShape s = {12, 12, 768, 50304, 1024};
  ActivationConfig full;
  full.micro_batch = 4;
  full.seq_len = 1024;
  ActivationConfig ckpt = full;
  ckpt.checkpointing = true;
  const ActivationEstimate a = estimate_activations(s, full);
  const ActivationEstimate b = estimate_activations(s, ckpt);
  EXPECT_LT(b.total_bytes, a.total_bytes);
  EXPECT_EQ(sum_role(b, "checkpoint"), 12u * 4 * 1024 * 768 * 4);
  // Recomputed internals are one block's worth: the same as the kept
  // internals of one block without checkpointing.
  const uint64_t kept_internals_per_block =
      (sum_role(a, "kept") - 4u * (4 * 1024 * 768) * (1 + 1) - 4u * (2 * 4 * 1024 + 4 * 1024 * 50304 + 4 * 1024) -
       12u * 4 * (4 * 1024 * 768)) /
      12;
  EXPECT_EQ(sum_role(b, "recompute"), kept_internals_per_block);
  // Backward scratch is the same either way.
  EXPECT_EQ(sum_role(a, "backward scratch"), sum_role(b, "backward scratch"));
  EXPECT_GT(sum_role(a, "backward scratch"), 0u);
}

TEST(Activations, AttentionProbabilitiesScaleWithTSquared) {
  const GptShape s{1, 4, 16, 32, 64};
  ActivationConfig c1;
  c1.seq_len = 32;
  c1.include_backward_scratch = false;
  ActivationConfig c2 = c1;
  c2.seq_len = 64;
  auto probs = [](const ActivationEstimate& e) {
    for (const auto& t : e.terms)
      if (t.name == "attention probabilities") return t.bytes;
    return uint64_t{0};
  };
  EXPECT_EQ(probs(estimate_activations(s, c2)), 4 * probs(estimate_activations(s, c1)));
}

TEST(Activations, EveryTensorIsPaddedToSixtyFourBytes) {
  // B*T = 3 rows: each mean/rstd tensor of 3 floats takes 16 floats.
  const GptShape s{1, 1, 16, 16, 3};
  ActivationConfig packed;
  packed.align_elements = 1;
  ActivationConfig padded;  // default: 16 floats, as GptWorkspace carves
  const ActivationEstimate a = estimate_activations(s, packed);
  const ActivationEstimate b = estimate_activations(s, padded);
  ASSERT_EQ(a.terms.size(), b.terms.size());
  uint64_t expected = 0;
  for (const ActivationTerm& t : a.terms) expected += (t.elements + 15) / 16 * 16 * t.count * 4;
  EXPECT_EQ(b.total_bytes, expected);
  EXPECT_GT(b.total_bytes, a.total_bytes);
}

TEST(Activations, BackwardScratchIsOneBlocksGradients) {
  // B=2, T=4, C=8: residual, layernorm and attention-output gradients N*C,
  // qkv N*3C, GELU and fc N*4C each, one head's T*T.
  const GptShape s{3, 2, 8, 16, 4};
  ActivationConfig cfg;
  cfg.micro_batch = 2;
  cfg.align_elements = 1;
  const uint64_t n = 8, c = 8, t = 4;
  EXPECT_EQ(sum_role(estimate_activations(s, cfg), "backward scratch"), 4 * (n * c * (1 + 1 + 1 + 3 + 4 + 4) + t * t));
}

TEST(Activations, MlpWorkspaceByHand) {
  // widths 3 -> 5 -> 2, B = 4: input 12, fc0 out 20, GELU 20, fc1 out 8,
  // targets 8, losses 4, labels 4; scratch fc0 20 + GELU 20 + fc1 8.
  const int widths[] = {3, 5, 2};
  ActivationConfig cfg;
  cfg.micro_batch = 4;
  const ActivationEstimate e = estimate_mlp_activations(widths, cfg);
  EXPECT_EQ(sum_role(e, "kept"), 4u * (12 + 20 + 20 + 8 + 8 + 4 + 4));
  EXPECT_EQ(sum_role(e, "backward scratch"), 4u * (20 + 20 + 8));
  const int one[] = {3};
  EXPECT_THROW(estimate_mlp_activations(one, cfg), ConfigError);
}

TEST(Activations, BadConfigIsConfigError) {
  const GptShape s{1, 1, 4, 8, 16};
  ActivationConfig c;
  c.seq_len = 17;
  EXPECT_THROW(estimate_activations(s, c), ConfigError);
  c.seq_len = 4;
  c.micro_batch = 0;
  EXPECT_THROW(estimate_activations(s, c), ConfigError);
}

}  // namespace
}  // namespace zerodp::plan
