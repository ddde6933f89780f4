// SPDX-License-Identifier: Apache-2.0
// Llama: a Llama-family decoder (Llama 3.2, SmolLM2, Qwen2.5) behind the
// Model interface. Units: the token embedding, one per block, the final
// norm, and the LM head when it is not tied (llama_config.h). Ops:
// embedding, blocks, final norm, LM head (the embedding's unit again when
// tied: its gradient accumulates over both ops, as GPT-2's does).
// Tensors carry Hugging Face's names ("model.layers.3.self_attn.q_proj.weight"),
// so a consolidated checkpoint's safetensors are the Hugging Face layout.
// Thread-safety: immutable after construction (model/model.h).
#pragma once

#include <string>
#include <vector>

#include "model/causal_lm.h"
#include "model/llama_config.h"
#include "model/unit_params.h"

namespace zerodp::model {

class LlamaWorkspace;

class Llama final : public CausalLm {
 public:
  explicit Llama(const LlamaConfig& config);

  std::string kind() const override { return "llama"; }
  bool attends_within_segments() const override { return true; }
  ModelConfig config() const override;
  std::string describe() const override;
  size_t num_params() const override { return num_params_; }
  const std::vector<UnitInfo>& units() const override { return units_; }
  const std::vector<Op>& ops() const override { return ops_; }
  // Hugging Face's init: every matrix N(0, 0.02) (initializer_range), norms
  // 1, biases 0. One random stream per tensor.
  std::vector<TensorInfo> tensors() const override;
  std::unique_ptr<Workspace> make_workspace(int micro_batch, int seq_len, bool checkpointing) const override;
  // bf16 product inputs: each block's n1, q, k, v, y, n2 and m
  // (model/llama_workspace.h).
  std::unique_ptr<Workspace> make_workspace_for(const WorkspaceOptions& options) const override;
  // The embedding's and the LM head's backward in two parts
  // (Op::weight_grad_apart), the weight parts also by rows of their unit.
  void backward_weights(int op_index, std::span<float> unit_grads, Workspace& ws) const override;
  void backward_weights_rows(int op_index, size_t first_row, std::span<float> rows, Workspace& ws) const override;
  std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int seq_len) const override;
  // 6 x (matmul parameters per token, the head included) + 12 L T H d
  // (attention's products as executed, forward and backward).
  double train_flops_per_position(int seq_len) const override;

  int vocab() const override { return config_.vocab; }
  int max_context() const override { return config_.max_seq_len; }
  // Through the LM head (the embedding when tied), one position.
  void next_token_logits(std::span<const float> params, Workspace& ws, int pos, std::span<float> logits) const override;

  const LlamaConfig& llama_config() const { return config_; }

 private:
  // What ops()[i] runs: op 0 the embedding, ops 1..L the blocks, L+1 the
  // final norm, L+2 the LM head.
  enum class Step { kEmbedding, kBlock, kFinalNorm, kLmHead };
  Step step(int op_index) const;
  // The workspace of the embedding's or the LM head's backward part
  // (ConfigError for another op, or the head's before its forward).
  LlamaWorkspace& split_backward_workspace(int op_index, Workspace& base) const;
  // The ops on either form of the unit (CausalLm).
  void forward_unit(int op_index, UnitParams params, Workspace& base) const override;
  void backward_unit(int op_index, UnitParams params, std::span<float> grads, Workspace& base) const override;
  void backward_input_unit(int op_index, UnitParams params, Workspace& base) const override;
  int head_unit() const { return config_.tied ? 0 : config_.layers + 2; }

  LlamaConfig config_;
  LlamaBlockLayout layout_;
  size_t num_params_ = 0;
  std::vector<UnitInfo> units_;
  std::vector<Op> ops_;
};

}  // namespace zerodp::model
