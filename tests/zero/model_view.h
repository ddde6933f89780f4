// SPDX-License-Identifier: Apache-2.0
// A model seen through a view that can hide two of its abilities from the
// engine, so that a test can hold what they change against the run without
// them: the LM head's backward in two parts (Op::weight_grad_apart; hidden,
// the engine keeps the tied gradient open through the whole backward) and
// bf16 units read in place (Model::reads_bf16_weights; hidden, the engine
// converts each unit into its fp32 compute copy).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"

namespace zerodp::zero::testing {

struct ModelViewOptions {
  bool split_head = true;
  bool bf16_in_place = true;
};

class ModelView final : public model::Model {
 public:
  ModelView(const model::Model& m, ModelViewOptions options) : m_(m), options_(options), ops_(m.ops()) {
    if (!options.split_head) {
      for (model::Op& op : ops_) op.weight_grad_apart = false;
    }
  }
  std::string kind() const override { return m_.kind(); }
  std::string describe() const override { return m_.describe(); }
  size_t num_params() const override { return m_.num_params(); }
  const std::vector<model::UnitInfo>& units() const override { return m_.units(); }
  const std::vector<model::Op>& ops() const override { return ops_; }
  std::vector<model::TensorInfo> tensors() const override { return m_.tensors(); }
  std::unique_ptr<model::Workspace> make_workspace(int b, int t, bool ckpt) const override {
    return m_.make_workspace(b, t, ckpt);
  }
  std::unique_ptr<model::Workspace> make_workspace_for(const model::WorkspaceOptions& o) const override {
    return m_.make_workspace_for(o);
  }
  void forward(int i, std::span<const float> p, model::Workspace& ws) const override { m_.forward(i, p, ws); }
  void backward(int i, std::span<const float> p, std::span<float> g, model::Workspace& ws) const override {
    m_.backward(i, p, g, ws);
  }
  void backward_input(int i, std::span<const float> p, model::Workspace& ws) const override {
    m_.backward_input(i, p, ws);
  }
  void backward_weights(int i, std::span<float> g, model::Workspace& ws) const override {
    m_.backward_weights(i, g, ws);
  }
  bool reads_bf16_weights() const override { return options_.bf16_in_place && m_.reads_bf16_weights(); }
  void forward_bf16(int i, std::span<const BFloat16> p, std::span<float> w, model::Workspace& ws) const override {
    m_.forward_bf16(i, p, w, ws);
  }
  void backward_bf16(int i, std::span<const BFloat16> p, std::span<float> w, std::span<float> g,
                     model::Workspace& ws) const override {
    m_.backward_bf16(i, p, w, g, ws);
  }
  void backward_input_bf16(int i, std::span<const BFloat16> p, std::span<float> w,
                           model::Workspace& ws) const override {
    m_.backward_input_bf16(i, p, w, ws);
  }
  std::vector<kernels::LinearShape> linear_shapes(int b, int t) const override { return m_.linear_shapes(b, t); }
  double train_flops_per_position(int t) const override { return m_.train_flops_per_position(t); }

 private:
  const model::Model& m_;
  ModelViewOptions options_;
  std::vector<model::Op> ops_;
};

}  // namespace zerodp::zero::testing
