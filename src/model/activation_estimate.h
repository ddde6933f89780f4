// SPDX-License-Identifier: Apache-2.0
// An estimate of a model's activation memory per rank for one micro-batch:
// the tensors the forward pass keeps for backward and the backward scratch,
// listed one by one as a family's workspace allocates them, so that the
// total is what the engine books under the ledger's "activations" category
// (Workspace::total_bytes()). Each family says its own tensors
// (ModelSpec::estimate_activations; GPT's list: model/gpt_family.h) and
// tests/plan/plan_vs_ledger_test.cc holds the estimate and the ledger equal.
// Thread-safety: plain values; ActivationTerms is used by one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zerodp::model {

struct ActivationConfig {
  int micro_batch = 1;         // B
  int seq_len = 0;             // T; 0 means the model's context
  bool checkpointing = false;  // keep only block outputs, recompute blocks
  // Keep the tensors only matrix products read as bf16 operands
  // (WorkspaceOptions::bf16_product_inputs: --compute bf16).
  bool bf16_product_inputs = false;
  bool include_backward_scratch = true;
  int element_bytes = 4;    // fp32 compute
  int align_elements = 16;  // each tensor padded to a multiple (GptWorkspace: 64 bytes)
};

struct ActivationTerm {
  std::string name;
  std::string shape;      // "B*T*3C"
  std::string role;       // "kept", "checkpoint", "recompute", "working copy" or "backward scratch"
  uint64_t elements = 0;  // one tensor, before padding
  uint64_t count = 0;     // how many are live at the peak (L per-block tensors, or 1)
  uint64_t bytes = 0;     // padded elements * count * element_bytes
};

struct ActivationEstimate {
  ActivationConfig config;  // with seq_len resolved
  std::vector<ActivationTerm> terms;
  uint64_t total_bytes = 0;  // the peak: sum of every term
};

// One tensor of a family's list: its name, shape formula and elements per
// micro-batch.
struct ActivationRule {
  std::string name;
  std::string shape;
  uint64_t elements = 0;
  // Read only by matrix products: kept as bf16 operands with
  // ActivationConfig::bf16_product_inputs.
  bool product_input = false;
};

// Appends terms to an estimate and keeps its total; every tensor is padded
// to the alignment on its own, as the workspaces carve them.
class ActivationTerms {
 public:
  // ConfigError ("[plan] ...") unless the micro-batch, element size and
  // alignment of est.config are positive.
  explicit ActivationTerms(ActivationEstimate& est);
  void add(const ActivationRule& rule, const char* role, uint64_t count);
  // A tensor kept in bf16, two elements to one of the config's (fp32)
  // elements, padded to the same alignment.
  void add_bf16(const ActivationRule& rule, const char* role, uint64_t count);
  // Whether the blocks keep their product inputs as bf16 (the config asks
  // for it and checkpointing keeps none of them).
  bool bf16_product_inputs() const;
  // A block's internal tensors: `layers` of each kept (the product inputs in
  // bf16 where bf16_product_inputs()), or with checkpointing one set of
  // recompute scratch.
  void add_block_internals(const std::vector<ActivationRule>& rules, uint64_t layers);
  // A tensor the workspace holds outside its aligned arena (its own
  // vector): its elements as they are, unpadded.
  void add_unpadded(const ActivationRule& rule, const char* role, uint64_t count);

 private:
  // `slots` elements of the config's size hold the tensor, padded to the
  // alignment.
  void add_slots(std::string name, const ActivationRule& rule, const char* role, uint64_t count, uint64_t slots);
  ActivationEstimate& est_;
};

}  // namespace zerodp::model
