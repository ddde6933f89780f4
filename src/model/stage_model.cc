// SPDX-License-Identifier: Apache-2.0
#include "model/stage_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace zerodp::model {

StageModel::StageModel(const Model& whole, int first_op, int end_op)
    : whole_(whole), first_op_(first_op), end_op_(end_op) {
  const auto& all_ops = whole.ops();
  const int ops = static_cast<int>(all_ops.size());
  ZDP_CHECK(0 <= first_op && first_op < end_op && end_op <= ops, ConfigError,
            "[pipeline] a stage of ops [{}, {}) of a model with {}", first_op, end_op, ops);
  ZDP_CHECK((first_op == 0 || whole.can_cut_before(first_op)) && (end_op == ops || whole.can_cut_before(end_op)),
            ConfigError, "[pipeline] the {} model cannot be cut before op {}", whole.kind(),
            first_op == 0 || whole.can_cut_before(first_op) ? end_op : first_op);
  for (int i = first_op; i < end_op; ++i) whole_units_.push_back(all_ops[static_cast<size_t>(i)].unit);
  std::sort(whole_units_.begin(), whole_units_.end());
  whole_units_.erase(std::unique(whole_units_.begin(), whole_units_.end()), whole_units_.end());
  for (int u : whole_units_) {
    const UnitInfo& w = whole.units()[static_cast<size_t>(u)];
    units_.push_back({w.name, num_params_, w.count});
    num_params_ += w.count;
  }
  for (int i = first_op; i < end_op; ++i) {
    Op op = all_ops[static_cast<size_t>(i)];
    op.unit = unit_of(op.unit);
    ops_.push_back(std::move(op));
  }
}

int StageModel::unit_of(int whole_unit) const {
  const auto it = std::lower_bound(whole_units_.begin(), whole_units_.end(), whole_unit);
  return it != whole_units_.end() && *it == whole_unit ? static_cast<int>(it - whole_units_.begin()) : -1;
}

std::string StageModel::describe() const {
  return fmt::format("ops {}..{} of {}: {} parameters", first_op_, end_op_ - 1, whole_.describe(), num_params_);
}

std::vector<TensorInfo> StageModel::tensors() const {
  std::vector<TensorInfo> out;
  for (TensorInfo t : whole_.tensors()) {
    // The whole model's unit of this tensor: the one whose range holds it.
    for (size_t k = 0; k < whole_units_.size(); ++k) {
      const UnitInfo& w = whole_.units()[static_cast<size_t>(whole_units_[k])];
      if (t.offset < w.offset || t.offset >= w.offset + w.count) continue;
      t.origin = t.init_key();
      t.offset = units_[k].offset + (t.offset - w.offset);
      out.push_back(std::move(t));
      break;
    }
  }
  return out;
}

std::unique_ptr<Workspace> StageModel::make_workspace(int micro_batch, int seq_len, bool checkpointing) const {
  return make_workspace_for({.micro_batch = micro_batch, .seq_len = seq_len, .checkpointing = checkpointing});
}

std::unique_ptr<Workspace> StageModel::make_workspace_for(const WorkspaceOptions& options) const {
  return whole_.make_stage_workspace(options, first_op_, end_op_);
}

void StageModel::forward(int op_index, std::span<const float> unit_params, Workspace& ws) const {
  whole_.forward(first_op_ + op_index, unit_params, ws);
}

void StageModel::backward(int op_index, std::span<const float> unit_params, std::span<float> unit_grads,
                          Workspace& ws) const {
  whole_.backward(first_op_ + op_index, unit_params, unit_grads, ws);
}

void StageModel::backward_input(int op_index, std::span<const float> unit_params, Workspace& ws) const {
  whole_.backward_input(first_op_ + op_index, unit_params, ws);
}

void StageModel::backward_weights(int op_index, std::span<float> unit_grads, Workspace& ws) const {
  whole_.backward_weights(first_op_ + op_index, unit_grads, ws);
}

void StageModel::forward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                              Workspace& ws) const {
  whole_.forward_bf16(first_op_ + op_index, unit_params, widened, ws);
}

void StageModel::backward_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                               std::span<float> unit_grads, Workspace& ws) const {
  whole_.backward_bf16(first_op_ + op_index, unit_params, widened, unit_grads, ws);
}

void StageModel::backward_input_bf16(int op_index, std::span<const BFloat16> unit_params, std::span<float> widened,
                                     Workspace& ws) const {
  whole_.backward_input_bf16(first_op_ + op_index, unit_params, widened, ws);
}

std::vector<kernels::LinearShape> StageModel::linear_shapes(int micro_batch, int seq_len) const {
  return whole_.linear_shapes(micro_batch, seq_len);
}

double StageModel::train_flops_per_position(int seq_len) const { return whole_.train_flops_per_position(seq_len); }

std::span<float> StageModel::input(Workspace& ws) const {
  return first_op_ == 0 ? std::span<float>{} : whole_.boundary_activation(ws, first_op_);
}

std::span<float> StageModel::input_gradient(Workspace& ws) const {
  return first_op_ == 0 ? std::span<float>{} : whole_.boundary_gradient(ws, first_op_);
}

std::span<float> StageModel::output(Workspace& ws) const {
  return end_op_ == static_cast<int>(whole_.ops().size()) ? std::span<float>{}
                                                          : whole_.boundary_activation(ws, end_op_);
}

std::span<float> StageModel::output_gradient(Workspace& ws) const {
  return end_op_ == static_cast<int>(whole_.ops().size()) ? std::span<float>{} : whole_.boundary_gradient(ws, end_op_);
}

}  // namespace zerodp::model
