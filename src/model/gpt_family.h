// SPDX-License-Identifier: Apache-2.0
// The GPT-2 family ("kind": "gpt"): its spec, schema, presets and planner
// facts, registered with model/family.h as a built-in family.
//
// Presets (Φ checked by tests/model/presets_test.cc):
//   gpt-tiny    (default) byte-level GPT: L4 NH4 C128, vocab 256, maxT 128;
//               learns visibly on text in a minute on 2 cores
//   gpt-10m     L6 NH8 C320, vocab 8192, maxT 256 (~10M)
//   gpt-bench   L6 NH6 C384, vocab 50257 (padded 50304), maxT 64: the
//               benchmark GPT of REFERENCE.md
//   gpt-30m     gpt-bench without the vocab padding (50257 rows), as
//               PyTorch counts REFERENCE.md's model: 29,970,816 parameters
//   gpt2-124m   L12 NH12 C768, vocab 50257 (padded 50304), maxT 1024:
//               124,475,904 parameters
//   gpt2-350m, gpt2-774m, gpt2-1558m   GPT-2 medium, large, XL (vocab
//               50257 padded to 50304, maxT 1024)
// Schema: {"kind": "gpt", "layers": 6, "heads": 6, "channels": 384,
//   "vocab": 50257, "max_seq_len": 64, "padded_vocab": 50304 (optional;
//   default: the llm.c padding to a multiple of 128)}. zerodp plan's former
//   spelling "context" is refused naming "max_seq_len".
//
// Activations (estimate_activations; B = micro-batch, T = sequence length,
// C = channels, H = heads, V = padded vocab, L = layers, N = B*T; every
// element 4 bytes and every tensor at a 64-byte boundary, as GptWorkspace
// carves its arena). Kept for backward, without activation checkpointing:
//   once       embedding output (residual stream 0)   N*C
//   per block  ln1 output                             N*C
//              ln1 mean, ln1 rstd                     N each
//              qkv                                    N*3C
//              attention probabilities (softmax)      B*H*T*T
//              attention output (heads merged)        N*C
//              residual after attention               N*C
//              ln2 output                             N*C
//              ln2 mean, ln2 rstd                     N each
//              fc output (before GELU)                N*4C
//              GELU output                            N*4C
//              block output (residual stream l+1)     N*C
//   once       final layernorm output                 N*C
//              final layernorm mean, rstd             N each
//              logits (probabilities, then dlogits)   N*V
//              per-token losses                       N
// Backward scratch, one block's worth reused block to block: residual
//   gradient N*C, layernorm input gradient N*C (shared by ln1, ln2 and the
//   final layernorm), attention output gradient N*C, qkv gradient N*3C,
//   GELU output gradient N*4C, fc output gradient N*4C, and the attention
//   probabilities' gradient of one (sample, head) at a time T*T.
// With bf16 product inputs (--compute bf16) the ln1 output, qkv, attention
// output, ln2 output and GELU output are kept at 2 bytes an element, and two
// fp32 working buffers (N*4C and N*3C) are added.
// With activation checkpointing only the residual stream is kept (L + 1
// tensors of N*C); one block's internals are recompute scratch, rebuilt
// block by block in backward. Not allocated at all: attention scores before
// softmax, projection outputs (added into the residual at once), dropout
// masks (none).
// Thread-safety: immutable values and pure functions.
#pragma once

#include <string_view>

#include "model/family.h"
#include "model/gpt_config.h"

namespace zerodp::model {

class GptSpec final : public ModelSpec {
 public:
  explicit GptSpec(const GptConfig& config);  // validates

  std::string kind() const override { return "gpt"; }
  nlohmann::ordered_json to_json() const override;
  std::unique_ptr<Model> build() const override;
  size_t num_params() const override;
  std::string describe() const override;
  std::optional<ActivationEstimate> estimate_activations(const ActivationConfig& config) const override;

  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
};

// The family's registry entry (model/builtin_families.cc lists it first).
Family gpt_family();

// `model` as a GPT config: ConfigError "[<op>] <what> needs a GPT model
// (\"kind\": \"gpt\"); <name> is a <kind>" otherwise.
const GptConfig& require_gpt(const ModelConfig& model, std::string_view op);

// A named GPT config.
ModelConfig gpt_model_config(std::string name, const GptConfig& config);

}  // namespace zerodp::model
