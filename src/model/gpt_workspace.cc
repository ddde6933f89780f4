// SPDX-License-Identifier: Apache-2.0
#include "model/gpt_workspace.h"

#include <algorithm>

#include "core/error.h"
#include "model/product_inputs.h"
#include "model/workspace_arena.h"

namespace zerodp::model {

GptWorkspace::GptWorkspace(const GptConfig& config, int micro_batch, int seq_len, bool checkpointing, GptPart part,
                           bool bf16_product_inputs)
    : batch_(micro_batch), seq_(seq_len), checkpointing_(checkpointing), config_(config), part_(part) {
  config.validate();
  ZDP_CHECK(micro_batch >= 1, ConfigError, "[gpt] micro batch is {}, must be at least 1", micro_batch);
  ZDP_CHECK(seq_len >= 1 && seq_len <= config.max_seq_len, ConfigError,
            "[gpt] sequence length {} must be in [1, {}] (the model's max_seq_len)", seq_len, config.max_seq_len);
  const size_t N = size_t(micro_batch) * seq_len;
  const size_t C = config.channels;
  const size_t T = seq_len;
  const int L = config.layers;
  if (part_.end_layer < 0) part_.end_layer = L;
  ZDP_CHECK(0 <= part_.first_layer && part_.first_layer <= part_.end_layer && part_.end_layer <= L, ConfigError,
            "[gpt] a workspace for blocks [{}, {}) of {}", part_.first_layer, part_.end_layer, L);
  const int blocks = part_.end_layer - part_.first_layer;

  detail::ArenaCarver carver;
  resid_.resize(static_cast<size_t>(blocks) + 1);
  for (auto& r : resid_) carver.add(r, N * C, true);
  // With checkpointing the one LayerActs set is recompute scratch, not kept.
  layers_.resize(checkpointing ? std::min(blocks, 1) : blocks);
  const bool bf16_inputs = bf16_product_inputs && !checkpointing && blocks > 0;
  // bf16 product inputs: the two fp32 working buffers every block shares.
  std::span<float> work_a, work_b;
  if (bf16_inputs) {
    carver.add(work_a, N * 4 * C, false);  // ln1, atty, fch_gelu
    carver.add(work_b, N * 3 * C, false);  // qkv, ln2
  }
  for (auto& a : layers_) {
    const bool keep = !checkpointing;
    auto product_input = [&](std::span<float>& fp32, std::span<BFloat16>& kept, size_t n) {
      detail::add_product_input(carver, fp32, kept, n, keep, bf16_inputs);
    };
    product_input(a.ln1, a.ln1_kept, N * C);
    carver.add(a.ln1_mean, N, keep);
    carver.add(a.ln1_rstd, N, keep);
    product_input(a.qkv, a.qkv_kept, N * 3 * C);
    carver.add(a.att, size_t(micro_batch) * config.heads * T * T, keep);
    product_input(a.atty, a.atty_kept, N * C);
    carver.add(a.res2, N * C, keep);
    product_input(a.ln2, a.ln2_kept, N * C);
    carver.add(a.ln2_mean, N, keep);
    carver.add(a.ln2_rstd, N, keep);
    carver.add(a.fch, N * 4 * C, keep);
    product_input(a.fch_gelu, a.fch_gelu_kept, N * 4 * C);
  }
  if (part_.head) {
    carver.add(lnf_, N * C, true);
    carver.add(lnf_mean_, N, true);
    carver.add(lnf_rstd_, N, true);
    carver.add(probs_, N * config.padded_vocab, true);
    carver.add(losses_, N, true);
  }
  carver.add(dresid_, N * C, false);
  carver.add(dln_, N * C, false);
  carver.add(datty_, N * C, false);
  carver.add(dqkv_, N * 3 * C, false);
  carver.add(dfch_gelu_, N * 4 * C, false);
  carver.add(dfch_, N * 4 * C, false);
  carver.add(datt_, T * T, false);
  arena_ = carver.carve();
  if (bf16_inputs) {
    for (auto& a : layers_) {
      a.ln1 = work_a.first(N * C);
      a.qkv = work_b.first(N * 3 * C);
      a.atty = work_a.first(N * C);
      a.ln2 = work_b.first(N * C);
      a.fch_gelu = work_a.first(N * 4 * C);
    }
  }
  activation_bytes_ = carver.activation_bytes();
  scratch_bytes_ = carver.scratch_bytes();
  tokens_.assign(N, 0);
  targets_.assign(N, 0);
}

void GptWorkspace::set_batch(const Batch& batch) {
  // GPT-2's attention has no segments: packed records would see each other.
  ZDP_CHECK(batch.segments.empty(), ConfigError,
            "[gpt] packed records need segment-aware attention, which GPT-2's lacks: train a Llama-family model, or "
            "lay chat records out one per window (--chat-packing pad)");
  const detail::TokenBatchInfo info =
      detail::copy_token_batch(batch, batch_, seq_, config_.vocab, "gpt", tokens_, targets_);
  has_targets_ = info.has_targets;
  set_masked_targets(info.masked_targets);
  loss_ = 0.0f;
  head_forward_done_ = false;
}

}  // namespace zerodp::model
