// SPDX-License-Identifier: Apache-2.0
// A model of your own, trained by zerodp's ZeRO engine. TwoLayer (tanh hidden
// layer, linear output, mean squared error) is written here against the
// model::Model interface: two units in one flat parameter buffer, one op per
// unit, forward and backward per op, tensors() for the initialisation. Then
// zero::Engine trains it at ZeRO stage 3 on 2 thread ranks: each rank keeps
// half of every unit and gathers a unit only for the op that uses it.
// Prints the loss as it falls; exits 0 only if it fell.
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "comm/world.h"
#include "core/error.h"
#include "model/model.h"
#include "zero/engine.h"

using namespace zerodp;

constexpr int kIn = 4, kHidden = 16;

// One rank's inputs, activations and activation gradients for B samples.
struct TwoLayerWorkspace final : model::Workspace {
  explicit TwoLayerWorkspace(int b) : batch(b), x(b * kIn), t(b), h(b * kHidden), y(b), dh(b * kHidden) {}
  void set_batch(const model::Batch& in) override {
    ZDP_CHECK(in.features.size() == x.size() && in.values.size() == t.size(), ShapeError,
              "[two-layer] {} features and {} values for a micro-batch of {}", in.features.size(), in.values.size(),
              batch);
    x.assign(in.features.begin(), in.features.end());
    t.assign(in.values.begin(), in.values.end());
  }
  float loss() const override { return loss_value; }
  size_t activation_bytes() const override { return (x.size() + t.size() + h.size() + y.size()) * sizeof(float); }
  size_t scratch_bytes() const override { return dh.size() * sizeof(float); }
  int micro_batch() const override { return batch; }
  int seq_len() const override { return 1; }
  bool checkpointing() const override { return false; }

  int batch;
  std::vector<float> x, t, h, y, dh;
  float loss_value = 0;
};

class TwoLayer final : public model::Model {
 public:
  // Unit "hidden": W1 [kHidden, kIn] then b1 [kHidden]; unit "out": w2 [kHidden] then b2.
  std::string kind() const override { return "two-layer"; }
  std::string describe() const override { return "two-layer tanh regression, 97 parameters"; }
  size_t num_params() const override { return units_[1].offset + units_[1].count; }
  const std::vector<model::UnitInfo>& units() const override { return units_; }
  const std::vector<model::Op>& ops() const override { return ops_; }
  std::vector<model::TensorInfo> tensors() const override {
    using model::TensorInit;
    const size_t o = units_[1].offset;
    return {{"hidden.w", 0, kIn * kHidden, {kHidden, kIn}, true, TensorInit::normal(1 / std::sqrt(double(kIn)))},
            {"hidden.b", kIn * kHidden, kHidden, {kHidden}, false, TensorInit::constant(0)},
            {"out.w", o, kHidden, {1, kHidden}, true, TensorInit::normal(1 / std::sqrt(double(kHidden)))},
            {"out.b", o + kHidden, 1, {1}, false, TensorInit::constant(0)}};
  }
  std::unique_ptr<model::Workspace> make_workspace(int micro_batch, int, bool checkpointing) const override {
    ZDP_CHECK(!checkpointing, ConfigError, "[two-layer] no activation checkpointing");
    return std::make_unique<TwoLayerWorkspace>(micro_batch);
  }
  void forward(int op, std::span<const float> p, model::Workspace& base) const override {
    auto& ws = static_cast<TwoLayerWorkspace&>(base);  // the engine passes our own workspace
    if (op == 0) {                                     // h = tanh(W1 x + b1)
      for (int b = 0; b < ws.batch; ++b) {
        for (int j = 0; j < kHidden; ++j) {
          float s = p[kIn * kHidden + j];
          for (int i = 0; i < kIn; ++i) s += p[j * kIn + i] * ws.x[b * kIn + i];
          ws.h[b * kHidden + j] = std::tanh(s);
        }
      }
      return;
    }
    ws.loss_value = 0;  // y = w2 . h + b2, loss = mean (y - t)^2
    for (int b = 0; b < ws.batch; ++b) {
      float s = p[kHidden];
      for (int j = 0; j < kHidden; ++j) s += p[j] * ws.h[b * kHidden + j];
      ws.y[b] = s;
      ws.loss_value += (s - ws.t[b]) * (s - ws.t[b]) / float(ws.batch);
    }
  }
  // Adds (+=) this op's parameter gradients into g, starting from the
  // engine's d(objective)/d(loss), loss_grad_scale().
  void backward(int op, std::span<const float> p, std::span<float> g, model::Workspace& base) const override {
    auto& ws = static_cast<TwoLayerWorkspace&>(base);
    for (int b = 0; b < ws.batch; ++b) {
      if (op == 1) {
        const float dy = ws.loss_grad_scale() * 2 * (ws.y[b] - ws.t[b]) / float(ws.batch);
        for (int j = 0; j < kHidden; ++j) g[j] += dy * ws.h[b * kHidden + j], ws.dh[b * kHidden + j] = dy * p[j];
        g[kHidden] += dy;
        continue;
      }
      for (int j = 0; j < kHidden; ++j) {
        const float h = ws.h[b * kHidden + j], dpre = ws.dh[b * kHidden + j] * (1 - h * h);
        for (int i = 0; i < kIn; ++i) g[j * kIn + i] += dpre * ws.x[b * kIn + i];
        g[kIn * kHidden + j] += dpre;
      }
    }
  }
  std::vector<kernels::LinearShape> linear_shapes(int micro_batch, int) const override {
    return {{micro_batch, kIn, kHidden}, {micro_batch, kHidden, 1}};
  }
  double train_flops_per_position(int) const override { return 6.0 * (kIn * kHidden + kHidden); }

 private:
  std::vector<model::UnitInfo> units_ = {{"hidden", 0, (kIn + 1) * kHidden}, {"out", (kIn + 1) * kHidden, kHidden + 1}};
  std::vector<model::Op> ops_ = {{0, model::OpKind::kDense, 0, "hidden"}, {1, model::OpKind::kDense, 1, "out"}};
};

int main() {
  const TwoLayer model;
  zero::EngineConfig config;
  config.stage = Stage::k3;  // parameters, gradients and optimizer state: each rank holds its half
  config.optimizer.adam.lr = config.lr_schedule.max_lr = 1e-2;  // AdamW, constant rate
  constexpr int kBatch = 32, kSteps = 150;
  std::vector<double> losses;
  comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
    zero::Engine engine(model, comm, config, /*seed=*/7, kBatch, /*seq_len=*/1);
    std::vector<float> x(kBatch * kIn), t(kBatch);
    std::mt19937 rng(1234 + comm.rank());  // each rank its own samples of t = sin(2 x0) + x1 x2 - x3 / 2
    std::uniform_real_distribution<float> u(-1, 1);
    const zero::BatchFeeder feed = [&](model::Workspace& ws, int) {
      for (float& v : x) v = u(rng);
      for (int b = 0; b < kBatch; ++b) {
        const float* s = &x[b * kIn];
        t[b] = std::sin(2 * s[0]) + s[1] * s[2] - s[3] / 2;
      }
      ws.set_batch({.features = x, .values = t});
    };
    if (comm.rank() == 0) {
      std::printf("%s on %d thread ranks, ZeRO stage %d: rank 0 holds %zu of %zu parameters\n",
                  model.describe().c_str(), comm.size(), stage_number(config.stage), engine.plan().owned_count(0),
                  model.num_params());
    }
    for (int step = 1; step <= kSteps; ++step) {
      const zero::StepResult r = engine.train_step(feed);  // r.loss: the mean over both ranks
      if (comm.rank() != 0) continue;
      losses.push_back(r.loss);
      if (step == 1 || step % 25 == 0) std::printf("step %3d  loss %.4f\n", step, r.loss);
    }
  });
  const bool fell = losses.back() < 0.5 * losses.front();
  std::printf("loss %.4f -> %.4f: %s\n", losses.front(), losses.back(), fell ? "it learned" : "it did NOT fall");
  return fell ? 0 : 1;
}
