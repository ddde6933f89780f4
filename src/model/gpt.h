// SPDX-License-Identifier: Apache-2.0
// Gpt: a GPT-2-family transformer (pre-LN, GELU-tanh MLP, causal attention,
// tied token embedding / LM head) behind the Model interface.
//
// Units (flat order, see gpt_config.h): 0 embedding, 1..L blocks, L+1 ln_f.
// Ops (forward order), L+3 of them:
//   0        kEmbedding  unit 0     resid(0) = wte[tokens] + wpe
//   1+l      kBlock      unit 1+l   resid(l+1) = block_l(resid(l))
//   L+1      kFinalNorm  unit L+1   lnf = layernorm(resid(L))
//   L+2      kLmHead     unit 0     logits = lnf @ wte^T; loss = mean xent
// The tied head is its own op on unit 0, so unit 0 appears twice: the engine
// acquires it twice and its gradient accumulates over ops L+2 and 0 (in that
// backward order) before it is complete (Model::last_backward_op()).
// The head's forward computes the loss and d(mean loss)/d(logits) in one pass
// (the logits buffer is overwritten); its backward applies the workspace's
// loss-gradient scale as the alpha of the two GEMMs. It runs in two parts
// (Op::weight_grad_apart): the engine adds the head's weight gradient to
// unit 0's only when the embedding's backward opens it, the same order.
// Thread-safety: immutable after construction; const methods are thread-safe.
#pragma once

#include <string>
#include <vector>

#include "model/causal_lm.h"
#include "model/gpt_config.h"
#include "model/unit_params.h"

namespace zerodp::model {

class GptWorkspace;

class Gpt final : public CausalLm {
 public:
  explicit Gpt(const GptConfig& config);

  std::string kind() const override { return "gpt"; }
  std::string describe() const override;
  size_t num_params() const override { return num_params_; }
  const std::vector<UnitInfo>& units() const override { return units_; }
  const std::vector<Op>& ops() const override { return ops_; }
  std::vector<TensorInfo> tensors() const override;
  // GPT-2 init: all weights N(0, 0.02), residual projections (attprojw,
  // fcprojw) N(0, 0.02 / sqrt(2L)), biases 0, layernorm weights 1; the padded
  // rows of wte (ids >= V) are 0. One random stream per tensor.
  std::unique_ptr<Workspace> make_workspace(int micro_batch, int seq_len, bool checkpointing) const override;
  // bf16 product inputs: each block's ln1, qkv, attention output, ln2 and
  // GELU output (model/gpt_workspace.h).
  std::unique_ptr<Workspace> make_workspace_for(const WorkspaceOptions& options) const override;
  // Pipeline stages: cuts before a block or the final norm; the residual
  // stream and its gradient cross them.
  bool can_cut_before(int op_index) const override;
  std::unique_ptr<Workspace> make_stage_workspace(const WorkspaceOptions& options, int first_op,
                                                  int end_op) const override;
  std::span<float> boundary_activation(Workspace& ws, int op_index) const override;
  std::span<float> boundary_gradient(Workspace& ws, int op_index) const override;
  // The embedding's and the LM head's backward in two parts
  // (Op::weight_grad_apart), the weight parts also by rows of their unit.
  void backward_weights(int op_index, std::span<float> unit_grads, Workspace& ws) const override;
  void backward_weights_rows(int op_index, size_t first_row, std::span<float> rows, Workspace& ws) const override;
  // 6 (L 12 C^2 + Vp C) + 12 L T C  (matmul weights; attention as executed)
  std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int seq_len) const override;
  double train_flops_per_position(int seq_len) const override;

  int vocab() const override { return config_.vocab; }
  int max_context() const override { return config_.max_seq_len; }
  // Through the tied head over the padded vocabulary (the training head's
  // product), of which the first vocab() logits are copied out.
  void next_token_logits(std::span<const float> params, Workspace& ws, int pos, std::span<float> logits) const override;

  ModelConfig config() const override;  // kind gpt, with gpt_config()
  const GptConfig& gpt_config() const { return config_; }
  const BlockLayout& layout() const { return layout_; }

 private:
  // What ops()[i] runs: op 0 the embedding, ops 1..L the blocks, L+1 the
  // final layernorm, L+2 the tied LM head.
  enum class Step { kEmbedding, kBlock, kFinalNorm, kLmHead };
  Step step(int op_index) const;
  // The workspace of the embedding's or the LM head's backward part
  // (ConfigError for another op, or the head's before its forward).
  GptWorkspace& split_backward_workspace(int op_index, Workspace& base) const;
  // The ops on either form of the unit (CausalLm).
  void forward_unit(int op_index, UnitParams params, Workspace& base) const override;
  void backward_unit(int op_index, UnitParams params, std::span<float> grads, Workspace& base) const override;
  void backward_input_unit(int op_index, UnitParams params, Workspace& base) const override;

  GptConfig config_;
  BlockLayout layout_;
  size_t num_params_;
  std::vector<UnitInfo> units_;
  std::vector<Op> ops_;
};

}  // namespace zerodp::model
