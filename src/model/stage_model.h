// SPDX-License-Identifier: Apache-2.0
// StageModel: a contiguous range of another model's ops, as a model of its
// own: what one pipeline stage trains (zero/pipeline.h).
//
// Its units are the units its ops read, in the whole model's flat order,
// packed into a flat buffer of their own; its ops are the range's, with the
// units renumbered. A unit that ops of two stages read (GPT's tied
// embedding: the embedding on the first stage, the head on the last) is a
// unit of both; the pipeline keeps the copies equal. Tensors keep the whole
// model's initial values (TensorInfo::origin), so a stage's engine starts
// from the bits the whole model's would.
// Workspaces are the whole model's stage workspaces (make_stage_workspace);
// forward and backward are the whole model's ops. Its units make no
// gradient in rows (UnitInfo::grad_row 0): the pipeline hands the tied
// embedding's gradient whole from the last stage to the first.
// Thread-safety: immutable after construction, as every Model.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"

namespace zerodp::model {

class StageModel final : public Model {
 public:
  // Ops [first_op, end_op) of `whole` (ConfigError where the family cannot
  // be cut there). `whole` must outlive this.
  StageModel(const Model& whole, int first_op, int end_op);

  std::string kind() const override { return whole_.kind(); }
  std::string describe() const override;
  size_t num_params() const override { return num_params_; }
  const std::vector<UnitInfo>& units() const override { return units_; }
  const std::vector<Op>& ops() const override { return ops_; }
  std::vector<TensorInfo> tensors() const override;
  std::unique_ptr<Workspace> make_workspace(int micro_batch, int seq_len, bool checkpointing) const override;
  std::unique_ptr<Workspace> make_workspace_for(const WorkspaceOptions& options) const override;
  void forward(int op_index, std::span<const float> unit_params, Workspace& ws) const override;
  void backward(int op_index, std::span<const float> unit_params, std::span<float> unit_grads,
                Workspace& ws) const override;
  void backward_input(int op_index, std::span<const float> unit_params, Workspace& ws) const override;
  void backward_weights(int op_index, std::span<float> unit_grads, Workspace& ws) const override;
  bool reads_bf16_weights() const override { return whole_.reads_bf16_weights(); }
  void forward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                    Workspace& ws) const override;
  void backward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                     std::span<float> unit_grads, Workspace& ws) const override;
  void backward_input_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                           Workspace& ws) const override;
  std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int seq_len) const override;
  // The whole model's (a pipeline's FLOPs are the model's).
  double train_flops_per_position(int seq_len) const override;

  const Model& whole() const { return whole_; }
  int first_op() const { return first_op_; }
  int end_op() const { return end_op_; }
  // The whole model's index of each unit here.
  const std::vector<int>& whole_units() const { return whole_units_; }
  // The stage's unit that holds the whole model's unit `whole_unit`, or -1.
  int unit_of(int whole_unit) const;
  // The tensor that enters the stage (its first op's input; empty span on the
  // first stage) and its gradient, in `ws`.
  std::span<float> input(Workspace& ws) const;
  std::span<float> input_gradient(Workspace& ws) const;
  // The tensor that leaves it (the next stage's input) and the gradient that
  // comes back for it; empty on the last stage.
  std::span<float> output(Workspace& ws) const;
  std::span<float> output_gradient(Workspace& ws) const;

 private:
  const Model& whole_;
  int first_op_, end_op_;
  std::vector<int> whole_units_;
  std::vector<UnitInfo> units_;
  std::vector<Op> ops_;
  size_t num_params_ = 0;
};

}  // namespace zerodp::model
