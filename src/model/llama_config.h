// SPDX-License-Identifier: Apache-2.0
// The shape of a Llama-family decoder (Llama 3.2, SmolLM2, Qwen2.5) and
// where each tensor lives in the flat parameter buffer. Hugging Face's
// conventions (../docs/llama.md): RMSNorm, rotary position embedding in the
// half-split layout, grouped-query attention, the SwiGLU MLP, optional q/k/v
// biases (Qwen2), tied or untied embeddings.
//
// Flat order (units are contiguous):
//   unit 0       "embedding": embed_tokens [V, C]
//   unit 1+l     "block<l>":  input_layernorm [C],
//                             q_proj [H*d, C] (+ bias [H*d]), k_proj [Hkv*d, C] (+ bias),
//                             v_proj [Hkv*d, C] (+ bias), o_proj [C, H*d],
//                             post_attention_layernorm [C],
//                             gate_proj [I, C], up_proj [I, C], down_proj [C, I]
//   unit L+1     "norm":      norm [C]
//   unit L+2     "lm_head":   lm_head [V, C]   (only when the embeddings are untied)
// Linear weights are [out, in] row-major (nn.Linear's layout), as the
// Hugging Face checkpoints store them.
// Thread-safety: plain values.
#pragma once

#include <cstddef>
#include <string>

namespace zerodp::model {

// Llama 3's "rope_scaling": {"rope_type": "llama3", "factor", "low_freq_factor",
// "high_freq_factor", "original_max_position_embeddings"}.
struct LlamaRopeScaling {
  bool llama3 = false;  // false: plain RoPE
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position = 8192;
  friend bool operator==(const LlamaRopeScaling&, const LlamaRopeScaling&) = default;
};

struct LlamaConfig {
  int vocab = 0;          // V
  int hidden = 0;         // C
  int layers = 0;         // L
  int heads = 0;          // H
  int kv_heads = 0;       // Hkv, divides H
  int head_dim = 0;       // d (even: RoPE rotates pairs of halves)
  int intermediate = 0;   // I, the MLP's width
  int max_seq_len = 0;    // the longest sequence zerodp trains or generates
  bool tied = true;       // lm_head is embed_tokens
  bool qkv_bias = false;  // Qwen2's q/k/v biases
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  LlamaRopeScaling rope_scaling;

  // Throws ConfigError naming the bad field and what would fit.
  void validate() const;
  std::string describe() const;
  friend bool operator==(const LlamaConfig&, const LlamaConfig&) = default;
};

// Offsets of each tensor inside one block unit, and the block's size.
// A bias offset is meaningful only with qkv_bias (its size is 0 otherwise).
struct LlamaBlockLayout {
  size_t input_norm, q, q_bias, k, k_bias, v, v_bias, o, post_norm, gate, up, down;
  size_t count;
};
LlamaBlockLayout llama_block_layout(const LlamaConfig& c);

size_t llama_num_params(const LlamaConfig& c);

}  // namespace zerodp::model
