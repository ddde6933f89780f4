// SPDX-License-Identifier: Apache-2.0
#include "model/llama_config.h"

#include <fmt/format.h>

#include "core/error.h"

namespace zerodp::model {

void LlamaConfig::validate() const {
  ZDP_CHECK(layers >= 1, ConfigError, "[llama] layers is {}, must be at least 1", layers);
  ZDP_CHECK(vocab >= 1, ConfigError, "[llama] vocab is {}, must be at least 1", vocab);
  ZDP_CHECK(hidden >= 1, ConfigError, "[llama] hidden is {}, must be at least 1", hidden);
  ZDP_CHECK(heads >= 1 && kv_heads >= 1 && heads % kv_heads == 0, ConfigError,
            "[llama] heads {} must be a positive multiple of kv_heads {} (grouped-query attention)", heads, kv_heads);
  ZDP_CHECK(head_dim >= 2 && head_dim % 2 == 0, ConfigError,
            "[llama] head_dim {} must be even and at least 2 (RoPE rotates its two halves)", head_dim);
  ZDP_CHECK(intermediate >= 1, ConfigError, "[llama] intermediate is {}, must be at least 1", intermediate);
  ZDP_CHECK(max_seq_len >= 1, ConfigError, "[llama] max_seq_len is {}, must be at least 1", max_seq_len);
  ZDP_CHECK(rope_theta > 1.0, ConfigError, "[llama] rope_theta {} must be greater than 1", rope_theta);
  ZDP_CHECK(norm_eps > 0.0 && norm_eps < 1.0, ConfigError, "[llama] rms_norm_eps {} must be in (0, 1)", norm_eps);
  if (rope_scaling.llama3) {
    const LlamaRopeScaling& s = rope_scaling;
    ZDP_CHECK(s.factor >= 1.0 && s.low_freq_factor > 0.0 && s.high_freq_factor > s.low_freq_factor &&
                  s.original_max_position >= 1,
              ConfigError,
              "[llama] rope_scaling llama3 needs factor >= 1, 0 < low_freq_factor < high_freq_factor and "
              "original_max_position_embeddings >= 1; got {}, {}, {}, {}",
              s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position);
  }
  // Keep every index in int range: the kernels take int shapes.
  const double widest = double(heads) * head_dim > double(intermediate) ? double(heads) * head_dim : intermediate;
  ZDP_CHECK(double(vocab) * hidden < 2.0e9 && widest * hidden < 2.0e9, ConfigError,
            "[llama] vocab {} or a projection of {} x hidden {} is too large", vocab, widest, hidden);
}

std::string LlamaConfig::describe() const {
  return fmt::format("llama L={} C={} H={} Hkv={} d={} I={} V={}{}{} maxT={}", layers, hidden, heads, kv_heads,
                     head_dim, intermediate, vocab, tied ? " tied" : " untied", qkv_bias ? " qkv-bias" : "",
                     max_seq_len);
}

LlamaBlockLayout llama_block_layout(const LlamaConfig& c) {
  const size_t C = c.hidden, q = size_t(c.heads) * c.head_dim, kv = size_t(c.kv_heads) * c.head_dim, I = c.intermediate,
               bias = c.qkv_bias ? 1 : 0;
  LlamaBlockLayout b{};
  size_t o = 0;
  auto take = [&o](size_t n) {
    const size_t at = o;
    o += n;
    return at;
  };
  b.input_norm = take(C);
  b.q = take(q * C);
  b.q_bias = take(bias * q);
  b.k = take(kv * C);
  b.k_bias = take(bias * kv);
  b.v = take(kv * C);
  b.v_bias = take(bias * kv);
  b.o = take(C * q);
  b.post_norm = take(C);
  b.gate = take(I * C);
  b.up = take(I * C);
  b.down = take(C * I);
  b.count = o;
  return b;
}

size_t llama_num_params(const LlamaConfig& c) {
  const size_t embed = size_t(c.vocab) * c.hidden;
  return embed + size_t(c.layers) * llama_block_layout(c).count + size_t(c.hidden) + (c.tied ? 0 : embed);
}

}  // namespace zerodp::model
