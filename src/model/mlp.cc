// SPDX-License-Identifier: Apache-2.0
#include "model/mlp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "kernels/linear.h"
#include "kernels/softmax_xent.h"
#include "model/mlp_family.h"

namespace zerodp::model {

using kernels::KernelKind;
using kernels::ScopedKernelTimer;

void MlpConfig::validate() const {
  ZDP_CHECK(widths.size() >= 2, ConfigError, "[mlp] widths needs at least [in, out], got {} entries", widths.size());
  for (int w : widths) {
    ZDP_CHECK(w >= 1, ConfigError, "[mlp] width {} must be at least 1", w);
  }
  ZDP_CHECK(head != MlpHead::kClassification || widths.back() >= 2, ConfigError,
            "[mlp] a classification head needs at least 2 outputs, got {}", widths.back());
}

std::string MlpConfig::describe() const {
  return fmt::format("mlp widths=[{}] head={}", fmt::join(widths, ","),
                     head == MlpHead::kRegression ? "regression" : "classification");
}

size_t mlp_num_params(const MlpConfig& c) {
  size_t n = 0;
  for (size_t l = 0; l + 1 < c.widths.size(); ++l) n += size_t(c.widths[l] + 1) * c.widths[l + 1];
  return n;
}

namespace {

// Per-rank state: inputs, per-layer pre-activations and activations, and
// their gradients (N = micro batch).
class MlpWorkspace final : public Workspace {
 public:
  MlpWorkspace(const MlpConfig& c, int micro_batch) : config_(c), batch_(micro_batch) {
    const size_t L = c.widths.size() - 1;
    const size_t B = micro_batch;
    h_.resize(L + 1);
    pre_.resize(L);
    dh_.resize(L + 1);
    dpre_.resize(L);
    h_[0] = AlignedBuffer<float>(B * c.widths[0]);  // [B, in] features
    for (size_t l = 0; l < L; ++l) {
      pre_[l] = AlignedBuffer<float>(B * c.widths[l + 1]);                   // [B, w_{l+1}] linear output
      if (l + 1 < L) h_[l + 1] = AlignedBuffer<float>(B * c.widths[l + 1]);  // gelu(pre)
      dpre_[l] = AlignedBuffer<float>(B * c.widths[l + 1]);
      if (l + 1 < L) dh_[l + 1] = AlignedBuffer<float>(B * c.widths[l + 1]);
    }
    values_ = AlignedBuffer<float>(B * c.widths.back());
    labels_.assign(B, 0);
    losses_ = AlignedBuffer<float>(B);
    for (auto& b : h_) activation_ += b.bytes();
    for (auto& b : pre_) activation_ += b.bytes();
    activation_ += values_.bytes() + losses_.bytes() + labels_.size() * sizeof(int32_t);
    for (auto& b : dh_) scratch_ += b.bytes();
    for (auto& b : dpre_) scratch_ += b.bytes();
  }

  void set_batch(const Batch& batch) override {
    const size_t B = batch_;
    ZDP_CHECK(batch.features.size() == B * config_.widths[0], ShapeError,
              "[mlp] batch has {} features, expected micro batch {} x {} inputs", batch.features.size(), B,
              config_.widths[0]);
    std::copy(batch.features.begin(), batch.features.end(), h_[0].data());
    if (config_.head == MlpHead::kRegression) {
      ZDP_CHECK(batch.values.size() == B * config_.widths.back(), ShapeError,
                "[mlp] batch has {} target values, expected micro batch {} x {} outputs", batch.values.size(), B,
                config_.widths.back());
      std::copy(batch.values.begin(), batch.values.end(), values_.data());
    } else {
      ZDP_CHECK(batch.targets.size() == B, ShapeError, "[mlp] batch has {} class targets, expected {}",
                batch.targets.size(), B);
      for (int32_t y : batch.targets) {
        ZDP_CHECK(y >= 0 && y < config_.widths.back(), ShapeError, "[mlp] label {} outside [0, {})", y,
                  config_.widths.back());
      }
      std::copy(batch.targets.begin(), batch.targets.end(), labels_.begin());
    }
    loss_ = 0;
  }
  float loss() const override { return loss_; }
  size_t activation_bytes() const override { return activation_; }
  size_t scratch_bytes() const override { return scratch_; }
  int micro_batch() const override { return batch_; }
  int seq_len() const override { return 1; }
  bool checkpointing() const override { return false; }

  MlpConfig config_;
  int batch_;
  std::vector<AlignedBuffer<float>> h_, pre_, dh_, dpre_;
  AlignedBuffer<float> values_, losses_;
  std::vector<int32_t> labels_;
  float loss_ = 0;
  size_t activation_ = 0, scratch_ = 0;
};

MlpWorkspace& as_mlp(Workspace& ws) {
  auto* m = dynamic_cast<MlpWorkspace*>(&ws);
  ZDP_CHECK(m != nullptr, ConfigError, "[mlp] the workspace was not made by an Mlp model");
  return *m;
}

}  // namespace

ModelConfig Mlp::config() const { return {"custom", std::make_shared<const MlpSpec>(config_)}; }

Mlp::Mlp(const MlpConfig& config) : config_(config) {
  config_.validate();
  size_t offset = 0;
  for (size_t l = 0; l + 1 < config_.widths.size(); ++l) {
    const size_t count = size_t(config_.widths[l] + 1) * config_.widths[l + 1];
    units_.push_back({fmt::format("fc{}", l), offset, count});
    ops_.push_back({static_cast<int>(l), static_cast<int>(l), fmt::format("fc{}", l), l > 0});
    offset += count;
  }
  num_params_ = offset;
}

std::vector<TensorInfo> Mlp::tensors() const {
  std::vector<TensorInfo> t;
  for (size_t l = 0; l < units_.size(); ++l) {
    const int in = config_.widths[l], out = config_.widths[l + 1];
    // N(0, 1/in) weights (variance-preserving for the inputs), zero biases.
    t.push_back({fmt::format("fc{}.w", l),
                 units_[l].offset,
                 size_t(in) * out,
                 {out, in},
                 true,
                 TensorInit::normal(1.0 / std::sqrt(double(in)))});
    t.push_back({fmt::format("fc{}.b", l),
                 units_[l].offset + size_t(in) * out,
                 size_t(out),
                 {out},
                 false,
                 TensorInit::constant(0.0f)});
  }
  return t;
}

std::string Mlp::describe() const { return fmt::format("{}, {} parameters", config_.describe(), num_params_); }

std::unique_ptr<Workspace> Mlp::make_workspace(int micro_batch, int /*seq_len*/, bool checkpointing) const {
  ZDP_CHECK(!checkpointing, ConfigError, "[mlp] activation checkpointing is for the GPT; turn it off for an MLP");
  ZDP_CHECK(micro_batch >= 1, ConfigError, "[mlp] micro batch is {}, must be at least 1", micro_batch);
  return std::make_unique<MlpWorkspace>(config_, micro_batch);
}

void Mlp::forward(int op_index, std::span<const float> params, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size(), ShapeError, "[mlp] op {} out of range [0, {})", op_index,
            ops_.size());
  ZDP_CHECK_EQ(params.size(), units_[op_index].count, ShapeError, "[mlp] forward: parameter span size");
  MlpWorkspace& ws = as_mlp(base);
  const size_t l = op_index;
  const int in = config_.widths[l], out = config_.widths[l + 1];
  const kernels::LinearShape s{ws.batch_, in, out};
  kernels::Profile* prof = ws.profile();
  {
    ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
    kernels::linear_forward(ws.pre_[l], ws.h_[l].span(), params.subspan(0, size_t(in) * out),
                            params.subspan(size_t(in) * out), s);
  }
  const bool last = l + 1 == units_.size();
  if (!last) {
    ScopedKernelTimer t(prof, KernelKind::kGelu);
    kernels::gelu_forward(ws.h_[l + 1], ws.pre_[l].span());
  } else if (config_.head == MlpHead::kRegression) {
    ScopedKernelTimer t(prof, KernelKind::kResidual);
    ws.loss_ = kernels::mse_forward(ws.pre_[l].span(), ws.values_.span());
  } else {
    // Probabilities go to dpre (backward turns them into logit gradients);
    // pre keeps the logits.
    ScopedKernelTimer t(prof, KernelKind::kSoftmaxXent);
    std::copy(ws.pre_[l].begin(), ws.pre_[l].end(), ws.dpre_[l].begin());
    ws.loss_ = kernels::softmax_xent_forward(ws.dpre_[l], ws.losses_, ws.labels_, {ws.batch_, out, out});
  }
}

void Mlp::backward(int op_index, std::span<const float> params, std::span<float> grads, Workspace& base) const {
  check_backward_spans(op_index, params.size(), grads.size());
  MlpWorkspace& ws = as_mlp(base);
  const size_t l = op_index;
  const int in = config_.widths[l], out = config_.widths[l + 1];
  kernels::Profile* prof = ws.profile();
  const bool last = l + 1 == units_.size();
  if (!last) {
    ScopedKernelTimer t(prof, KernelKind::kGelu);
    kernels::gelu_backward(ws.dpre_[l], ws.pre_[l].span(), ws.dh_[l + 1].span());
  } else if (config_.head == MlpHead::kRegression) {
    kernels::mse_backward(ws.dpre_[l], ws.pre_[l].span(), ws.values_.span(), ws.loss_grad_scale());
  } else {
    // Recompute the probabilities from the logits so that backward may run
    // again after one forward (cheap: B x out).
    ScopedKernelTimer t(prof, KernelKind::kSoftmaxXent);
    std::copy(ws.pre_[l].begin(), ws.pre_[l].end(), ws.dpre_[l].begin());
    const kernels::XentShape xs{ws.batch_, out, out};
    kernels::softmax_xent_forward(ws.dpre_[l], ws.losses_, ws.labels_, xs);
    kernels::softmax_xent_backward(ws.dpre_[l], ws.labels_, ws.loss_grad_scale() / ws.batch_, xs);
  }
  const kernels::LinearShape s{ws.batch_, in, out};
  ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
  // The first layer makes no input gradient, so it reads no weights
  // (ops_[0].backward_reads_params is false; params may be empty).
  std::span<float> dinp = l > 0 ? ws.dh_[l].span() : std::span<float>{};
  const auto weight = l > 0 ? params.subspan(0, size_t(in) * out) : std::span<const float>{};
  kernels::linear_backward(dinp, grads.subspan(0, size_t(in) * out), grads.subspan(size_t(in) * out),
                           ws.dpre_[l].span(), ws.h_[l].span(), weight, s, false);
}

std::vector<kernels::LinearShape> Mlp::linear_shapes(int micro_batch, int /*seq_len*/) const {
  std::vector<kernels::LinearShape> shapes;
  for (size_t l = 0; l + 1 < config_.widths.size(); ++l) {
    shapes.push_back({micro_batch, config_.widths[l], config_.widths[l + 1]});
  }
  return shapes;
}

double Mlp::train_flops_per_position(int /*seq_len*/) const {
  double n = 0;
  for (size_t l = 0; l + 1 < config_.widths.size(); ++l) n += double(config_.widths[l]) * config_.widths[l + 1];
  return 6.0 * n;
}

}  // namespace zerodp::model
