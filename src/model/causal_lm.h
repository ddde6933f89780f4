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
};

}  // namespace zerodp::model
