// SPDX-License-Identifier: Apache-2.0
#include "model/model.h"

#include <algorithm>

#include "core/error.h"
#include "model/family.h"

namespace zerodp::model {

std::span<const float> Model::unit_span(std::span<const float> all, int unit) const {
  const auto& us = units();
  ZDP_CHECK(unit >= 0 && size_t(unit) < us.size(), ShapeError, "[model] unit {} out of range [0, {})", unit, us.size());
  ZDP_CHECK_EQ(all.size(), num_params(), ShapeError, "[model] parameter buffer size");
  return all.subspan(us[unit].offset, us[unit].count);
}

std::span<float> Model::unit_span(std::span<float> all, int unit) const {
  const auto& us = units();
  ZDP_CHECK(unit >= 0 && size_t(unit) < us.size(), ShapeError, "[model] unit {} out of range [0, {})", unit, us.size());
  ZDP_CHECK_EQ(all.size(), num_params(), ShapeError, "[model] parameter buffer size");
  return all.subspan(us[unit].offset, us[unit].count);
}

void Model::init_range(std::span<float> out, size_t first, uint64_t seed) const {
  init_range(tensors(), out, first, seed);
}

void Model::init_range(std::span<const TensorInfo> tensors, std::span<float> out, size_t first, uint64_t seed) const {
  ZDP_CHECK(first <= num_params() && out.size() <= num_params() - first, ShapeError,
            "[model] init: elements [{}, {}) lie past the model's {} parameters", first, first + out.size(),
            num_params());
  const size_t end = first + out.size();
  for (const TensorInfo& t : tensors) {
    const size_t lo = std::max(first, t.offset), hi = std::min(end, t.offset + t.count);
    if (lo >= hi) continue;
    init_tensor_slice(t.init, t.init_key(), lo - t.offset, out.subspan(lo - first, hi - lo), seed);
  }
}

void Model::init_params(std::span<float> all, uint64_t seed) const {
  ZDP_CHECK_EQ(all.size(), num_params(), ShapeError, "[model] init: parameter buffer size");
  init_range(all, 0, seed);
}

namespace {

[[noreturn]] void refuse_stages(const std::string& kind) {
  ZDP_THROW(ConfigError,
            "[{}] this model family cannot be cut into pipeline stages: train it without --pipeline-stages", kind);
}

}  // namespace

std::unique_ptr<Workspace> Model::make_stage_workspace(const WorkspaceOptions& /*options*/, int /*first_op*/,
                                                       int /*end_op*/) const {
  refuse_stages(kind());
}

std::span<float> Model::boundary_activation(Workspace& /*ws*/, int /*op_index*/) const { refuse_stages(kind()); }

void Model::backward_input(int op_index, std::span<const float> /*unit_params*/, Workspace& /*ws*/) const {
  ZDP_THROW(ConfigError, "[{}] op {} has no backward in two parts (Op::weight_grad_apart)", kind(), op_index);
}

void Model::backward_weights(int op_index, std::span<float> /*unit_grads*/, Workspace& /*ws*/) const {
  ZDP_THROW(ConfigError, "[{}] op {} has no backward in two parts (Op::weight_grad_apart)", kind(), op_index);
}

namespace {

[[noreturn]] void refuse_bf16_weights(const std::string& kind, int op_index) {
  ZDP_THROW(ConfigError, "[{}] op {}: this model family does not read bf16 weights in place (reads_bf16_weights)", kind,
            op_index);
}

}  // namespace

void Model::backward_weights_rows(int op_index, size_t /*first_row*/, std::span<float> /*rows*/,
                                  Workspace& /*ws*/) const {
  ZDP_THROW(ConfigError, "[{}] op {}'s unit has no gradient in rows (UnitInfo::grad_row)", kind(), op_index);
}

void Model::forward_bf16(int op_index, std::span<const BFloat16> /*unit_params*/, std::span<float> /*widened*/,
                         Workspace& /*ws*/) const {
  refuse_bf16_weights(kind(), op_index);
}

void Model::backward_bf16(int op_index, std::span<const BFloat16> /*unit_params*/, std::span<float> /*widened*/,
                          std::span<float> /*unit_grads*/, Workspace& /*ws*/) const {
  refuse_bf16_weights(kind(), op_index);
}

void Model::backward_input_bf16(int op_index, std::span<const BFloat16> /*unit_params*/, std::span<float> /*widened*/,
                                Workspace& /*ws*/) const {
  refuse_bf16_weights(kind(), op_index);
}

std::span<float> Model::boundary_gradient(Workspace& /*ws*/, int /*op_index*/) const { refuse_stages(kind()); }

GradOps grad_ops(const Model& model, bool bf16_in_place) {
  GradOps g;
  for (const UnitInfo& u : model.units()) {
    g.counts.push_back(u.count);
    if (bf16_in_place) g.grad_rows.push_back(u.grad_row);
  }
  for (const Op& op : model.ops()) {
    g.units.push_back(op.unit);
    g.backward_reads.push_back(op.backward_reads_params);
    g.weight_grad_apart.push_back(op.weight_grad_apart);
    if (bf16_in_place) g.copied.push_back(op.backward_reads_params ? op.bf16_widened : 0);
  }
  return g;
}

std::vector<int> Model::last_backward_op() const {
  std::vector<int> last(units().size(), -1);
  const auto& o = ops();
  for (int i = static_cast<int>(o.size()) - 1; i >= 0; --i) last[o[i].unit] = i;
  return last;
}

void Model::check_backward_spans(int op_index, size_t params, size_t grads) const {
  const auto& o = ops();
  ZDP_CHECK(op_index >= 0 && static_cast<size_t>(op_index) < o.size(), ShapeError, "[{}] op {} out of range [0, {})",
            kind(), op_index, o.size());
  const Op& op = o[static_cast<size_t>(op_index)];
  const size_t count = units()[static_cast<size_t>(op.unit)].count;
  ZDP_CHECK(params == count || (params == 0 && !op.backward_reads_params), ShapeError,
            "[{}] backward of {}: {} parameters, expected {}{}", kind(), op.name, params, count,
            op.backward_reads_params ? "" : " or none");
  ZDP_CHECK(grads == count, ShapeError, "[{}] backward of {}: {} gradients, expected {}", kind(), op.name, grads,
            count);
}

float forward_all(const Model& model, std::span<const float> params, Workspace& ws) {
  const auto& ops = model.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    model.forward(static_cast<int>(i), model.unit_span(params, ops[i].unit), ws);
  }
  return ws.loss();
}

void backward_all(const Model& model, std::span<const float> params, std::span<float> grads, Workspace& ws) {
  const auto& ops = model.ops();
  for (int i = static_cast<int>(ops.size()) - 1; i >= 0; --i) {
    model.backward(i, model.unit_span(params, ops[i].unit), model.unit_span(grads, ops[i].unit), ws);
  }
}

ModelConfig Model::config() const {
  ZDP_THROW(ConfigError,
            "[model] a model of kind \"{}\" has no config to record: register its family "
            "(model::register_family) and override Model::config to checkpoint and rebuild it",
            kind());
}

}  // namespace zerodp::model
