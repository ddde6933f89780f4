// An estimate of a GPT's activation memory per rank for one micro-batch:
// the tensors the forward pass keeps for backward, listed one by one so the
// list can be held against the ledger's measured peak and tuned to match the
// real kernels (src/kernels, src/model). B = micro-batch, T = sequence
// length, C = channels, H = heads, V = vocab, L = layers; every element is
// `element_bytes` (fp32 compute: 4).
//
// Kept for backward, without activation checkpointing:
//   once       embedding output (x0)                  B*T*C
//   per block  ln1 output                             B*T*C
//              ln1 mean and rstd                      2*B*T
//              qkv                                    B*T*3C
//              attention probabilities (softmax)      B*H*T*T
//              attention output (heads merged)        B*T*C
//              residual after attention               B*T*C
//              ln2 output                             B*T*C
//              ln2 mean and rstd                      2*B*T
//              fc output (before GELU)                B*T*4C
//              GELU output                            B*T*4C
//              block output (residual after MLP)      B*T*C
//   once       final layernorm output                 B*T*C
//              final layernorm mean and rstd          2*B*T
//              logits (probabilities in place)        B*T*V
//              per-token losses                       B*T
// Backward scratch (live at the same time as the kept tensors, at the start
// of backward): the residual-stream gradient B*T*C and one block's worth of
// activation gradients (same shapes as one block's internals, reused block to
// block); dlogits is written in place over the logits.
//
// With activation checkpointing only each block's output is kept (L of
// them); during backward one block is recomputed at a time, so one block's
// internals are live on top. Not counted: attention scores before softmax
// (the softmax backward needs only the probabilities), the attention and MLP
// projection outputs (added into the residual at once), dropout masks (none).
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/model_shape.h"

namespace zerodp::plan {

struct ActivationConfig {
  int micro_batch = 1;             // B
  int seq_len = 0;                 // T; 0 means the model's context
  bool checkpointing = false;      // keep only block outputs, recompute blocks
  bool include_backward_scratch = true;
  int element_bytes = 4;           // fp32 compute
};

// One line of the estimate: `count` tensors of `elements` each.
struct ActivationTerm {
  std::string name;
  std::string shape;     // "B*T*3C"
  std::string role;      // "kept", "checkpoint", "recompute" or "backward scratch"
  uint64_t elements = 0; // one tensor
  uint64_t count = 0;    // how many are live at the peak (L per-block tensors, or 1)
  uint64_t bytes = 0;    // elements * count * element_bytes
};

struct ActivationEstimate {
  ActivationConfig config;  // with seq_len resolved
  std::vector<ActivationTerm> terms;
  uint64_t total_bytes = 0;  // the peak: sum of every term
};

// ConfigError when B < 1, T < 1, or T exceeds the model's context.
ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config);

}  // namespace zerodp::plan
