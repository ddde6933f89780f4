// SPDX-License-Identifier: Apache-2.0
// CausalLm: a Model that predicts the next token (GPT-2, the Llama family):
// what `zerodp train` needs of a model beyond training it, to answer the
// held-out sums and write the sample (model/generate.h). A family whose
// models derive from it is trained by `zerodp train`; the trainer knows no
// family by name.
// Thread-safety: as Model (immutable; const methods from many threads).
#pragma once

#include <span>

#include "model/model.h"
#include "model/unit_params.h"

namespace zerodp::model {

class CausalLm : public Model {
 public:
  // Token ids the model takes and predicts: [0, vocab()).
  virtual int vocab() const = 0;
  // The longest window it runs (its position table or rope's context).
  virtual int max_context() const = 0;
  // Runs the forward pass up to the final norm over the window set in `ws`
  // (a workspace of this model for one sequence, whose batch holds the
  // tokens) and writes the logits of the token after position `pos` into
  // `logits` (vocab() floats). `params` is the whole flat buffer.
  virtual void next_token_logits(std::span<const float> params, Workspace& ws, int pos,
                                 std::span<float> logits) const = 0;
  // Whether its attention keeps packed records apart (Batch::segments).
  virtual bool attends_within_segments() const { return false; }

  // A causal LM writes each op once, on either form of its unit
  // (model/unit_params.h: fp32, or bf16 read in place), so it reads bf16
  // units in place under bf16 products.
  void forward(int op_index, std::span<const float> params, Workspace& ws) const final {
    forward_unit(op_index, params, ws);
  }
  void backward(int op_index, std::span<const float> params, std::span<float> grads, Workspace& ws) const final {
    backward_unit(op_index, params, grads, ws);
  }
  void backward_input(int op_index, std::span<const float> params, Workspace& ws) const final {
    backward_input_unit(op_index, params, ws);
  }
  bool reads_bf16_weights() const final { return true; }
  void forward_bf16(int op_index, std::span<const BFloat16> params, std::span<float> widened,
                    Workspace& ws) const final {
    forward_unit(op_index, UnitParams(params, widened), ws);
  }
  void backward_bf16(int op_index, std::span<const BFloat16> params, std::span<float> widened, std::span<float> grads,
                     Workspace& ws) const final {
    backward_unit(op_index, UnitParams(params, widened), grads, ws);
  }
  void backward_input_bf16(int op_index, std::span<const BFloat16> params, std::span<float> widened,
                           Workspace& ws) const final {
    backward_input_unit(op_index, UnitParams(params, widened), ws);
  }

 protected:
  virtual void forward_unit(int op_index, UnitParams params, Workspace& ws) const = 0;
  virtual void backward_unit(int op_index, UnitParams params, std::span<float> grads, Workspace& ws) const = 0;
  // Where ops()[op_index].weight_grad_apart (ConfigError elsewhere).
  virtual void backward_input_unit(int op_index, UnitParams params, Workspace& ws) const = 0;
};

}  // namespace zerodp::model
