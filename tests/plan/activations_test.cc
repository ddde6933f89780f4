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
  const uint64_t kept_internals_per_block = (sum_role(a, "kept") - 4u * (4 * 1024 * 768) * (1 + 1) -
                                             4u * (2 * 4 * 1024 + 4 * 1024 * 50304 + 4 * 1024) -
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
