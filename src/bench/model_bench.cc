// SPDX-License-Identifier: Apache-2.0
#include "bench/model_bench.h"
#include "model/gpt_family.h"
#include "model/mlp_family.h"

#include <algorithm>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "model/presets.h"
#include "optim/optimizer.h"

namespace zerodp::bench {
namespace {

// A stopwatch on one of core/clock.h's clocks.
class Stopwatch {
 public:
  explicit Stopwatch(ClockKind clock) : clock_(clock), start_(clock_seconds(clock)) {}
  // Seconds since construction or the last lap.
  double lap() {
    const double now = clock_seconds(clock_);
    const double s = now - start_;
    start_ = now;
    return s;
  }

 private:
  ClockKind clock_;
  double start_;
};

}  // namespace

double measure_sgemm_gflops(int n, ClockKind clock) {
  AlignedBuffer<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  std::mt19937 gen(1);  // NOLINT(cert-msc51-cpp): the same matrices every run
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (auto& x : a) x = d(gen);
  for (auto& x : b) x = d(gen);
  kernels::gemm(kernels::Trans::kNo, kernels::Trans::kNo, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    Stopwatch t(clock);
    kernels::gemm(kernels::Trans::kNo, kernels::Trans::kNo, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::max(best, 2.0 * n * n * n / t.lap() / 1e9);
  }
  return best;
}

ModelBenchResult run_model_bench(const ModelBenchOptions& o) {
  ZDP_CHECK(o.steps >= 1 && o.warmup >= 0, ConfigError, "[bench model] --steps must be >= 1 and --warmup >= 0");
  const model::ModelConfig cfg = model::resolve_model_config(o.model);
  const auto m = model::make_model(cfg);
  ModelBenchResult r;
  r.model = cfg.name;
  r.describe = m->describe();
  const auto* gpt = cfg.as<model::GptSpec>();
  const auto* mlp = cfg.as<model::MlpSpec>();
  ZDP_CHECK(gpt != nullptr || mlp != nullptr, ConfigError,
            "[bench model] --model {} is a \"{}\" model; bench model makes batches for gpt and mlp models", o.model,
            cfg.kind());
  r.is_gpt = gpt != nullptr;
  r.batch = o.batch;
  r.seq_len = r.is_gpt ? o.seq : 1;
  r.positions = size_t(o.batch) * r.seq_len;
  r.checkpointing = o.checkpointing;
  r.steps = o.steps;
  r.num_params = m->num_params();
  r.blas = kernels::blas_info();
  r.sgemm_size = o.sgemm_size;
  r.clock = o.clock;
  // Measured before and after the model steps; the best of both is the rate
  // the machine gives when undisturbed (the machine may be shared).
  r.sgemm_gflops = measure_sgemm_gflops(o.sgemm_size, o.clock);

  const size_t n = r.num_params;
  AlignedBuffer<float> params(n), grads(n);
  // The engine's AdamW (optim/), PyTorch defaults, lr 3e-4, on the whole model.
  optim::OptimizerConfig opt_cfg;
  opt_cfg.adam.lr = 3e-4;
  const auto adamw = optim::make_optimizer(opt_cfg, n);
  m->init_params(params, o.seed);
  auto ws = m->make_workspace(o.batch, r.seq_len, o.checkpointing);
  std::mt19937 gen(static_cast<uint32_t>(o.seed));
  std::vector<int32_t> tokens, targets, labels;
  std::vector<float> features, values;
  model::Batch batch;
  if (r.is_gpt) {
    std::uniform_int_distribution<int32_t> tok(0, gpt->config().vocab - 1);
    for (size_t i = 0; i < r.positions; ++i) tokens.push_back(tok(gen)), targets.push_back(tok(gen));
    batch.tokens = tokens;
    batch.targets = targets;
  } else {
    std::normal_distribution<float> x(0.0f, 1.0f);
    features.resize(size_t(o.batch) * mlp->config().widths.front());
    for (auto& f : features) f = x(gen);
    values.resize(size_t(o.batch) * mlp->config().widths.back());
    for (auto& f : values) f = x(gen);
    std::uniform_int_distribution<int32_t> cls(0, mlp->config().widths.back() - 1);
    for (int i = 0; i < o.batch; ++i) labels.push_back(cls(gen));
    batch.features = features;
    batch.values = values;
    batch.labels = labels;
  }

  double best_fb = 1e30, best_step = 1e30;
  r.profile.set_clock(o.clock);
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const bool timed = step >= o.warmup;
    ws->set_profile(timed ? &r.profile : nullptr);
    std::fill(grads.begin(), grads.end(), 0.0f);
    ws->set_batch(batch);
    Stopwatch t(o.clock);
    r.loss = model::forward_all(*m, params, *ws);
    const double f = t.lap();
    model::backward_all(*m, params, grads, *ws);
    const double b = t.lap();
    adamw->step(params, grads, opt_cfg.adam.lr);
    const double a = t.lap();
    if (timed) {
      r.forward_s += f, r.backward_s += b, r.adamw_s += a;
      best_fb = std::min(best_fb, f + b);
      best_step = std::min(best_step, f + b + a);
    }
  }
  ws->set_profile(nullptr);
  r.sgemm_gflops = std::max(r.sgemm_gflops, measure_sgemm_gflops(o.sgemm_size, o.clock));
  r.best_step_s = best_step;
  r.best_fwd_bwd_s = best_fb;
  r.train_flops_per_position = m->train_flops_per_position(r.seq_len);
  r.activation_bytes = ws->activation_bytes();
  r.scratch_bytes = ws->scratch_bytes();
  return r;
}

}  // namespace zerodp::bench
