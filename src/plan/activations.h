// SPDX-License-Identifier: Apache-2.0
// An estimate of a model's activation memory per rank for one micro-batch:
// the tensors the forward pass keeps for backward and the backward scratch,
// listed one by one as src/model's workspaces allocate them (GptWorkspace,
// the Mlp's workspace), so the total is what the engine books under the
// ledger's "activations" category (Workspace::total_bytes()).
// tests/plan/plan_vs_ledger_test.cc holds the two equal.
//
// GPT. B = micro-batch, T = sequence length, C = channels, H = heads,
// V = (padded) vocab, L = layers, N = B*T; every element is `element_bytes`
// (fp32 compute: 4) and every tensor starts at a 64-byte boundary
// (`align_elements` = 16 floats), as the workspace carves its arena.
// Kept for backward, without activation checkpointing:
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
// Backward scratch, one block's worth reused block to block:
//   residual gradient N*C, layernorm input gradient N*C (shared by ln1, ln2
//   and the final layernorm), attention output gradient N*C, qkv gradient
//   N*3C, GELU output gradient N*4C, fc output gradient N*4C, and the
//   attention probabilities' gradient of one (sample, head) at a time T*T.
// With activation checkpointing only the residual stream is kept (L + 1
// tensors of N*C); one block's internals are recompute scratch, rebuilt
// block by block in backward. Not allocated at all: attention scores before
// softmax (the softmax backward needs only the probabilities), projection
// outputs (added into the residual at once), dropout masks (none).
//
// MLP (widths w_0 .. w_L, micro-batch B, no padding): kept are the input
// B*w_0, each layer's linear output B*w_{l+1}, each hidden layer's GELU
// output, the target values B*w_L (allocated for either head), the losses B
// and the labels B (int32); scratch is each layer's output gradient and each
// hidden layer's GELU-output gradient.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/model_shape.h"

namespace zerodp::plan {

struct ActivationConfig {
  int micro_batch = 1;         // B
  int seq_len = 0;             // T; 0 means the model's context
  bool checkpointing = false;  // keep only block outputs, recompute blocks
  bool include_backward_scratch = true;
  int element_bytes = 4;    // fp32 compute
  int align_elements = 16;  // each tensor padded to a multiple (GptWorkspace: 64 bytes)
};

// One line of the estimate: `count` tensors of `elements` each.
struct ActivationTerm {
  std::string name;
  std::string shape;      // "B*T*3C"
  std::string role;       // "kept", "checkpoint", "recompute" or "backward scratch"
  uint64_t elements = 0;  // one tensor, before padding
  uint64_t count = 0;     // how many are live at the peak (L per-block tensors, or 1)
  uint64_t bytes = 0;     // padded elements * count * element_bytes
};

struct ActivationEstimate {
  ActivationConfig config;  // with seq_len resolved
  std::vector<ActivationTerm> terms;
  uint64_t total_bytes = 0;  // the peak: sum of every term
};

// ConfigError when B < 1, T < 1, or T exceeds the model's context.
ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config);

// The MLP's workspace (widths = [in, hidden..., out]); seq_len, checkpointing
// and align_elements are ignored (the MLP allocates each tensor on its own).
// ConfigError when B < 1 or fewer than two widths.
ActivationEstimate estimate_mlp_activations(std::span<const int> widths, const ActivationConfig& config);

}  // namespace zerodp::plan
