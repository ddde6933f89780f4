// SPDX-License-Identifier: Apache-2.0
// A model of your own, trained, checkpointed and exported by zerodp without
// editing zerodp. TwoLayer (tanh hidden layer, linear output, mean squared
// error) is written here against the model::Model interface: two units in
// one flat parameter buffer, one op per unit, forward and backward per op,
// tensors() for the initialisation. Its family ("two-layer") is registered
// with model::register_family: a spec that builds it and writes and reads
// its JSON, so that a checkpoint can record it and rebuild it.
//
// Then, on 2 thread ranks at ZeRO stage 3 (each rank keeps half of every
// unit and gathers a unit only for the op that uses it):
//   1. train 150 steps, saving a sharded checkpoint at step 100;
//   2. resume that checkpoint in a fresh engine and train steps 101-150
//      again: the losses must be the same bits;
//   3. reshard the checkpoint to 3 ranks (offline, as `zerodp ckpt reshard`)
//      and load it on 3 ranks at stage 2;
//   4. consolidate both checkpoints to safetensors (as `zerodp ckpt
//      consolidate`): the two files must hold the same bytes.
// Prints what it does; exits 0 only if the loss fell and every check held.
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <zerodp/zerodp.h>  // the whole public API; or one header, <zerodp/zero/engine.h>

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

// The family's config: this model has no free shape, so the schema is
// {"kind": "two-layer"} alone; a family with sizes would read them here.
class TwoLayerSpec final : public model::ModelSpec {
 public:
  std::string kind() const override { return "two-layer"; }
  nlohmann::ordered_json to_json() const override { return {{"kind", "two-layer"}}; }
  std::unique_ptr<model::Model> build() const override;
  size_t num_params() const override { return (kIn + 1) * kHidden + kHidden + 1; }
  std::string describe() const override { return "two-layer tanh regression, 97 parameters"; }
};

model::Family two_layer_family() {
  return {.kind = "two-layer",
          .schema = R"({"kind": "two-layer"})",
          .from_json = [](const nlohmann::json& j) -> model::SpecPtr {
            ZDP_CHECK(j.size() == 1, ConfigError, "[two-layer] the schema has no keys but \"kind\": {}", j.dump());
            return std::make_shared<const TwoLayerSpec>();
          }};
}

class TwoLayer final : public model::Model {
 public:
  // Unit "hidden": W1 [kHidden, kIn] then b1 [kHidden]; unit "out": w2 [kHidden] then b2.
  std::string kind() const override { return "two-layer"; }
  // What a checkpoint records and rebuilds this model from.
  model::ModelConfig config() const override { return {"custom", std::make_shared<const TwoLayerSpec>()}; }
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
  std::vector<model::Op> ops_ = {{0, 0, "hidden"}, {1, 1, "out"}};
};

std::unique_ptr<model::Model> TwoLayerSpec::build() const { return std::make_unique<TwoLayer>(); }

constexpr int kBatch = 32, kSteps = 150, kSaveAt = 100;

// Rank r's samples of t = sin(2 x0) + x1 x2 - x3 / 2 at step s: a function
// of (s, r), so that a resumed run reads the same data as the first.
zero::BatchFeeder feeder(const int& step, int rank) {
  return [&step, rank](model::Workspace& ws, int) {
    std::mt19937 rng(static_cast<uint32_t>(1234 + 7919 * step + rank));
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(kBatch * kIn), t(kBatch);
    for (float& v : x) v = u(rng);
    for (int b = 0; b < kBatch; ++b) {
      const float* s = &x[b * kIn];
      t[b] = std::sin(2 * s[0]) + s[1] * s[2] - s[3] / 2;
    }
    ws.set_batch({.features = x, .values = t});
  };
}

zero::EngineConfig engine_config(Stage stage) {
  zero::EngineConfig config;
  config.stage = stage;
  config.lr_schedule.max_lr = 1e-2;  // AdamW, constant rate
  return config;
}

// Trains steps [first, last] on `ranks` thread ranks, from the seed or from
// a checkpoint; saves at kSaveAt under `save_root` when given. Returns the
// losses (rank 0's view: the mean over ranks).
std::vector<double> train(const TwoLayer& model, int ranks, Stage stage, int first, int last,
                          const std::string& resume_from, const std::string& save_root) {
  std::vector<double> losses;
  comm::run_thread_ranks(ranks, {}, [&](comm::Communicator& comm) {
    zero::Engine engine(model, comm, engine_config(stage), /*seed=*/7, kBatch, /*seq_len=*/1);
    if (!resume_from.empty()) {
      const ckpt::LoadResult loaded = engine_ckpt::load(engine, resume_from);
      ZDP_CHECK_EQ(loaded.step + 1, first, Error, "[example] resumed at the wrong step");
    }
    if (comm.rank() == 0 && first == 1) {
      std::printf("%s on %d thread ranks, ZeRO stage %d: rank 0 holds %zu of %zu parameters\n",
                  model.describe().c_str(), comm.size(), stage_number(stage), engine.plan().owned_count(0),
                  model.num_params());
    }
    int step = first;
    const zero::BatchFeeder feed = feeder(step, comm.rank());
    for (; step <= last; ++step) {
      const zero::StepResult r = engine.train_step(feed);
      if (!save_root.empty() && step == kSaveAt) engine_ckpt::save(engine, save_root, {.data_step = step});
      if (comm.rank() != 0) continue;
      losses.push_back(r.loss);
      if (first == 1 && (step == 1 || step % 25 == 0)) std::printf("step %3d  loss %.4f\n", step, r.loss);
    }
  });
  return losses;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int main() {
  model::register_family(two_layer_family());
  const TwoLayer model;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("zerodp-custom-model-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string root = (dir / "ckpt").string();
  const std::string saved = root + "/step-00000100";
  bool ok = true;
  auto check = [&ok](bool held, const char* what) {
    std::printf("%s: %s\n", what, held ? "yes" : "NO");
    ok = ok && held;
  };

  // 1. Train, saving at step 100.
  const std::vector<double> losses = train(model, 2, Stage::k3, 1, kSteps, "", root);
  const bool fell = losses.back() < 0.5 * losses.front();
  std::printf("loss %.4f -> %.4f: %s\n", losses.front(), losses.back(), fell ? "it learned" : "it did NOT fall");
  ok = ok && fell;

  // 2. Resume the checkpoint: steps 101-150 again, the same bits.
  const std::vector<double> resumed = train(model, 2, Stage::k3, kSaveAt + 1, kSteps, saved, "");
  check(std::vector<double>(losses.begin() + kSaveAt, losses.end()) == resumed,
        "resumed from step 100, steps 101-150 give the same loss bits");

  // 3. Reshard to 3 ranks and load there at stage 2.
  const std::string resharded = (dir / "three").string();
  ckpt::reshard(saved, resharded, {.ranks = 3});
  check(ckpt::inspect_checkpoint(resharded).manifest.ranks == 3 && ckpt::inspect_checkpoint(resharded).ok(),
        "resharded to 3 ranks, every shard verified");
  const std::vector<double> on_three = train(model, 3, Stage::k2, kSaveAt + 1, kSaveAt + 5, resharded, "");
  check(on_three.size() == 5 && std::isfinite(on_three.back()), "loaded and trained on 3 ranks at stage 2");

  // 4. Consolidate both: the same safetensors bytes.
  const std::string out2 = (dir / "export2").string(), out3 = (dir / "export3").string();
  weights::consolidate(saved, out2);
  weights::consolidate(resharded, out3);
  const std::string a = file_bytes(out2 + "/model.safetensors"), b = file_bytes(out3 + "/model.safetensors");
  std::printf("consolidated: %s/model.safetensors, %zu bytes (tensors hidden.w, hidden.b, out.w, out.b)\n",
              out2.c_str(), a.size());
  check(!a.empty() && a == b, "the 2-rank and the 3-rank checkpoint consolidate to the same bytes");

  fs::remove_all(dir);
  std::printf("%s\n", ok ? "all checks held" : "a check FAILED");
  return ok ? 0 : 1;
}
