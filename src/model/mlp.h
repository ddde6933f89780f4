// SPDX-License-Identifier: Apache-2.0
// Mlp: a multi-layer perceptron behind the Model interface.
// widths = [in, h1, ..., out]; layer l maps widths[l] -> widths[l+1] with a
// weight [out, in] and bias [out]; GELU between layers, none after the last.
// Head: regression (MSE against `values`, PyTorch's mean over all elements) or
// classification (softmax cross-entropy against `labels`, mean over samples).
// Units and ops: one per layer ("fc<l>": weight then bias), in order; the last
// op also computes the loss.
// Thread-safety: immutable after construction; const methods are thread-safe.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace zerodp::model {

enum class MlpHead { kRegression, kClassification };

struct MlpConfig {
  std::vector<int> widths;  // [in, hidden..., out], at least 2 entries
  MlpHead head = MlpHead::kRegression;

  void validate() const;  // ConfigError
  std::string describe() const;
  friend bool operator==(const MlpConfig&, const MlpConfig&) = default;
};

size_t mlp_num_params(const MlpConfig& c);

class Mlp final : public Model {
 public:
  explicit Mlp(const MlpConfig& config);

  std::string kind() const override { return "mlp"; }
  std::string describe() const override;
  size_t num_params() const override { return num_params_; }
  const std::vector<UnitInfo>& units() const override { return units_; }
  const std::vector<Op>& ops() const override { return ops_; }
  std::vector<TensorInfo> tensors() const override;
  // Weights N(0, 1/in) (variance-preserving), biases 0; one stream per layer.
  // seq_len is ignored (use 1); checkpointing is not supported (ConfigError).
  std::unique_ptr<Workspace> make_workspace(int micro_batch, int seq_len, bool checkpointing) const override;
  void forward(int op_index, std::span<const float> unit_params, Workspace& ws) const override;
  void backward(int op_index, std::span<const float> unit_params, std::span<float> unit_grads,
                Workspace& ws) const override;
  std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int seq_len) const override;
  double train_flops_per_position(int seq_len) const override;  // per sample

  ModelConfig config() const override;  // kind mlp, with mlp_config()
  const MlpConfig& mlp_config() const { return config_; }

 private:
  MlpConfig config_;
  size_t num_params_ = 0;
  std::vector<UnitInfo> units_;
  std::vector<Op> ops_;
};

}  // namespace zerodp::model
