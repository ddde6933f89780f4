// SPDX-License-Identifier: Apache-2.0
#include "model/llama_workspace.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/gqa_attention.h"
#include "model/product_inputs.h"
#include "model/workspace_arena.h"

namespace zerodp::model {

kernels::RopeConfig llama_rope_config(const LlamaConfig& c) {
  kernels::RopeConfig r;
  r.head_dim = c.head_dim;
  r.theta = c.rope_theta;
  if (c.rope_scaling.llama3) {
    r.scaling = kernels::RopeScaling::kLlama3;
    r.factor = c.rope_scaling.factor;
    r.low_freq_factor = c.rope_scaling.low_freq_factor;
    r.high_freq_factor = c.rope_scaling.high_freq_factor;
    r.original_max_position = c.rope_scaling.original_max_position;
  }
  return r;
}

LlamaWorkspace::LlamaWorkspace(const LlamaConfig& config, int micro_batch, int seq_len, bool checkpointing,
                               bool bf16_product_inputs)
    : batch_(micro_batch), seq_(seq_len), checkpointing_(checkpointing), config_(config) {
  config.validate();
  ZDP_CHECK(micro_batch >= 1, ConfigError, "[llama] micro batch is {}, must be at least 1", micro_batch);
  ZDP_CHECK(seq_len >= 1 && seq_len <= config.max_seq_len, ConfigError,
            "[llama] sequence length {} must be in [1, {}] (the model's max_seq_len)", seq_len, config.max_seq_len);
  const size_t N = size_t(micro_batch) * seq_len, C = config.hidden, T = seq_len, F = config.intermediate;
  const size_t Dq = size_t(config.heads) * config.head_dim, Dkv = size_t(config.kv_heads) * config.head_dim;
  const int L = config.layers;
  detail::ArenaCarver carver;
  resid_.resize(L + 1);
  for (auto& r : resid_) carver.add(r, N * C, true);
  // With checkpointing the one LlamaActs set is recompute scratch, not kept.
  layers_.resize(checkpointing ? 1 : L);
  const bool bf16_inputs = bf16_product_inputs && !checkpointing;
  // bf16 product inputs: the four fp32 working buffers every block shares.
  std::span<float> work[4];
  if (bf16_inputs) {
    carver.add(work[0], N * std::max({C, Dq, F}), false);  // n1, y, m
    carver.add(work[1], N * std::max(Dq, C), false);       // q, n2
    carver.add(work[2], N * Dkv, false);                   // k
    carver.add(work[3], N * Dkv, false);                   // v
  }
  for (LlamaActs& a : layers_) {
    const bool keep = !checkpointing;
    auto product_input = [&](std::span<float>& fp32, std::span<BFloat16>& kept, size_t n) {
      detail::add_product_input(carver, fp32, kept, n, keep, bf16_inputs);
    };
    product_input(a.n1, a.n1_kept, N * C);
    carver.add(a.rstd1, N, keep);
    product_input(a.q, a.q_kept, N * Dq);
    product_input(a.k, a.k_kept, N * Dkv);
    product_input(a.v, a.v_kept, N * Dkv);
    carver.add(a.att, size_t(micro_batch) * config.heads * T * T, keep);
    product_input(a.y, a.y_kept, N * Dq);
    carver.add(a.h, N * C, keep);
    product_input(a.n2, a.n2_kept, N * C);
    carver.add(a.rstd2, N, keep);
    carver.add(a.gate, N * F, keep);
    carver.add(a.up, N * F, keep);
    product_input(a.m, a.m_kept, N * F);
  }
  carver.add(xf_, N * C, true);
  carver.add(rstdf_, N, true);
  carver.add(probs_, N * config.vocab, true);
  carver.add(losses_, N, true);
  carver.add(dresid_, N * C, false);
  carver.add(dn_, N * C, false);
  carver.add(dy_, N * Dq, false);
  carver.add(dq_, N * Dq, false);
  carver.add(dk_, N * Dkv, false);
  carver.add(dv_, N * Dkv, false);
  carver.add(dm_, N * F, false);
  carver.add(dgate_, N * F, false);
  carver.add(dup_, N * F, false);
  carver.add(datt_, T * T, false);
  arena_ = carver.carve();
  if (bf16_inputs) {
    for (LlamaActs& a : layers_) {
      a.n1 = work[0].first(N * C);
      a.q = work[1].first(N * Dq);
      a.k = work[2];
      a.v = work[3];
      a.y = work[0].first(N * Dq);
      a.n2 = work[1].first(N * C);
      a.m = work[0].first(N * F);
    }
  }
  // The RoPE table of this workspace's positions, T x d/2 cosines and
  // sines: scratch, counted with the arena.
  rope_ = kernels::make_rope_table(llama_rope_config(config), seq_len);
  activation_bytes_ = carver.activation_bytes();
  scratch_bytes_ = carver.scratch_bytes() + (rope_.cos.size() + rope_.sin.size()) * sizeof(float);
  tokens_.assign(N, 0);
  targets_.assign(N, 0);
}

void LlamaWorkspace::set_batch(const Batch& batch) {
  const detail::TokenBatchInfo info =
      detail::copy_token_batch(batch, batch_, seq_, config_.vocab, "llama", tokens_, targets_);
  has_targets_ = info.has_targets;
  set_masked_targets(info.masked_targets);
  if (batch.segments.empty()) {
    seg_start_.clear();
    positions_.clear();
  } else {
    ZDP_CHECK(batch.segments.size() == tokens_.size(), ShapeError,
              "[llama] batch has {} segment ids, expected {} (one per token) or none", batch.segments.size(),
              tokens_.size());
    seg_start_ = kernels::segment_starts(batch.segments, batch_, seq_);
    positions_ = kernels::segment_positions(seg_start_, batch_, seq_);
  }
  loss_ = 0.0f;
  head_forward_done_ = false;
}

}  // namespace zerodp::model
