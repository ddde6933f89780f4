// SPDX-License-Identifier: Apache-2.0
// The Llama family ("kind": "llama"): Llama 3.2, SmolLM2 and Qwen2.5
// decoders, their spec, schema, presets and planner facts, registered with
// model/family.h as a built-in family (docs/llama.md).
//
// Presets (Φ as the published checkpoints count it; tests/model/llama_test.cc):
//   llama-tiny     L4 C128 H4 Hkv2 d32 I352, vocab 256 (bytes), maxT 256, tied
//   smollm2-135m   L30 C576 H9 Hkv3 d64 I1536, vocab 49152, tied, θ 1e5: 134,515,008
//   smollm2-360m   L32 C960 H15 Hkv5 d64 I2560, vocab 49152, tied, θ 1e4: 361,821,120
//   qwen2.5-0.5b   L24 C896 H14 Hkv2 d64 I4864, vocab 151936, tied, q/k/v biases,
//                  θ 1e6, eps 1e-6: 494,032,768
//   llama3.2-1b    L16 C2048 H32 Hkv8 d64 I8192, vocab 128256, tied, θ 5e5,
//                  rope_scaling llama3 (32, 1, 4, 8192): 1,235,814,400
// Schema: {"kind": "llama", "vocab", "hidden", "layers", "heads", "kv_heads",
//   "head_dim", "intermediate", "max_seq_len" (integers), "tied", "qkv_bias"
//   (booleans; default true, false), "rope_theta", "norm_eps" (numbers;
//   default 10000, 1e-5), "rope_scaling" (optional: {"factor",
//   "low_freq_factor", "high_freq_factor", "original_max_position"}, Llama
//   3's rule)}.
//
// Activations (estimate_activations, as LlamaWorkspace carves them; N = B*T,
// Dq = H*d, Dkv = Hkv*d, F = intermediate, V = vocab; 4-byte elements, each
// tensor at a 64-byte boundary). Kept, without checkpointing:
//   once       embedding output (residual stream 0)            N*C
//   per block  input norm output N*C, its rstd N, q N*Dq, k N*Dkv, v N*Dkv
//              (q and k after RoPE), attention probabilities B*H*T*T,
//              attention output N*Dq, residual after attention N*C,
//              post-attention norm output N*C, its rstd N, gate N*F, up N*F,
//              silu(gate)*up N*F, block output N*C
//   once       final norm output N*C, its rstd N, logits N*V, losses N
// Backward scratch, one block's worth: residual gradient N*C, norm output
//   gradient N*C, attention output gradient N*Dq, dq N*Dq, dk N*Dkv, dv N*Dkv,
//   MLP gradients 3 x N*F, the probabilities' gradient of one head T*T; and
//   the RoPE table of the T positions, T*d/2 cosines and as many sines
//   (unpadded: its own vectors).
// With bf16 product inputs (--compute bf16) the input norm output, q, k, v,
// attention output, post-attention norm output and silu(gate)*up are kept
// at 2 bytes an element, and four fp32 working buffers are added
// (N*max(C,Dq,F), N*max(Dq,C), N*Dkv twice).
// With checkpointing only the residual stream is kept; one block's internals
// are recompute scratch.
// Thread-safety: immutable values and pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/family.h"
#include "model/llama_config.h"

namespace zerodp::model {

class LlamaSpec final : public ModelSpec {
 public:
  explicit LlamaSpec(const LlamaConfig& config);  // validates

  std::string kind() const override { return "llama"; }
  nlohmann::ordered_json to_json() const override;
  std::unique_ptr<Model> build() const override;
  size_t num_params() const override;
  std::string describe() const override;
  std::optional<ActivationEstimate> estimate_activations(const ActivationConfig& config) const override;

  const LlamaConfig& config() const { return config_; }

 private:
  LlamaConfig config_;
};

Family llama_family();

ModelConfig llama_model_config(std::string name, const LlamaConfig& config);

}  // namespace zerodp::model
