// SPDX-License-Identifier: Apache-2.0
#include "bench/model_bench.h"
#include "model/gpt_family.h"
#include "model/mlp_family.h"

#include <algorithm>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "core/simd.h"
#include "kernels/gemm_bf16.h"
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

namespace {

// Best-of-5 GFLOP/s of an n x n x n product through `product`.
template <typename Product>
double measure_square_gflops(int n, ClockKind clock, Product product) {
  AlignedBuffer<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  std::mt19937 gen(1);  // NOLINT(cert-msc51-cpp): the same matrices every run
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (auto& x : a) x = d(gen);
  for (auto& x : b) x = d(gen);
  product(n, a.data(), b.data(), c.data());
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    Stopwatch t(clock);
    product(n, a.data(), b.data(), c.data());
    best = std::max(best, 2.0 * n * n * n / t.lap() / 1e9);
  }
  return best;
}

}  // namespace

double measure_sgemm_gflops(int n, ClockKind clock) {
  return measure_square_gflops(n, clock, [](int size, const float* a, const float* b, float* c) {
    kernels::gemm(kernels::Trans::kNo, kernels::Trans::kNo, size, size, size, 1.0f, a, size, b, size, 0.0f, c, size);
  });
}

double measure_bf16_gemm_gflops(int n, ClockKind clock) {
  return measure_square_gflops(n, clock, [](int size, const float* a, const float* b, float* c) {
    kernels::gemm_bf16(kernels::Trans::kNo, kernels::Trans::kNo, size, size, size, 1.0f, a, size, b, size, 0.0f, c,
                       size);
  });
}

double measure_model_gemm_gflops(const std::vector<kernels::LinearShape>& shapes, kernels::Compute compute,
                                 ClockKind clock) {
  const kernels::ScopedCompute scoped(compute);
  size_t inp_size = 0, weight_size = 0, out_size = 0;
  double flops = 0;
  for (const kernels::LinearShape& s : shapes) {
    inp_size = std::max(inp_size, size_t(s.rows) * s.in);
    weight_size = std::max(weight_size, size_t(s.out) * s.in);
    out_size = std::max(out_size, size_t(s.rows) * s.out);
    flops += 3 * kernels::linear_flops(s);
  }
  AlignedBuffer<float> inp(inp_size), weight(weight_size), out(out_size), dinp(inp_size), dweight(weight_size);
  std::mt19937 gen(2);  // NOLINT(cert-msc51-cpp): the same matrices every run
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (auto* buffer : {&inp, &weight, &out}) {
    for (auto& x : *buffer) x = d(gen);
  }
  const auto all = [&] {
    using kernels::Trans;
    for (const kernels::LinearShape& s : shapes) {
      kernels::matmul(Trans::kNo, Trans::kYes, s.rows, s.out, s.in, 1.0f, inp.data(), s.in, weight.data(), s.in, 0.0f,
                      out.data(), s.out);
      kernels::matmul(Trans::kNo, Trans::kNo, s.rows, s.in, s.out, 1.0f, out.data(), s.out, weight.data(), s.in, 0.0f,
                      dinp.data(), s.in);
      kernels::matmul(Trans::kYes, Trans::kNo, s.out, s.in, s.rows, 1.0f, out.data(), s.out, inp.data(), s.in, 0.0f,
                      dweight.data(), s.in);
    }
  };
  all();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    Stopwatch t(clock);
    all();
    best = std::max(best, flops / t.lap() / 1e9);
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
  r.bf16_gemm_gflops = measure_bf16_gemm_gflops(o.sgemm_size, o.clock);
  r.compute = o.compute;
  r.simd = simd_level_name(active_simd_level());
  r.bf16_units = kernels::bf16_units_at(active_simd_level());
  const std::vector<kernels::LinearShape> shapes = m->linear_shapes(o.batch, r.seq_len);
  r.model_sgemm_gflops = measure_model_gemm_gflops(shapes, kernels::Compute::kFp32, o.clock);
  r.model_bf16_gflops = measure_model_gemm_gflops(shapes, kernels::Compute::kBf16, o.clock);

  const size_t n = r.num_params;
  AlignedBuffer<float> params(n), grads(n);
  // The engine's AdamW (optim/), PyTorch defaults, lr 3e-4, on the whole model.
  optim::OptimizerConfig opt_cfg;
  constexpr double kLr = 3e-4;
  const auto adamw = optim::make_optimizer(opt_cfg, n);
  m->init_params(params, o.seed);
  auto ws = m->make_workspace_for({.micro_batch = o.batch,
                                   .seq_len = r.seq_len,
                                   .checkpointing = o.checkpointing,
                                   .bf16_product_inputs = o.compute == kernels::Compute::kBf16});
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
    batch.targets = labels;
  }

  double best_fb = 1e30, best_step = 1e30;
  r.profile.set_clock(o.clock);
  const kernels::ScopedCompute compute(o.compute);
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
    adamw->step(params, grads, kLr);
    const double a = t.lap();
    if (timed) {
      r.forward_s += f, r.backward_s += b, r.adamw_s += a;
      best_fb = std::min(best_fb, f + b);
      best_step = std::min(best_step, f + b + a);
    }
  }
  ws->set_profile(nullptr);
  r.sgemm_gflops = std::max(r.sgemm_gflops, measure_sgemm_gflops(o.sgemm_size, o.clock));
  r.bf16_gemm_gflops = std::max(r.bf16_gemm_gflops, measure_bf16_gemm_gflops(o.sgemm_size, o.clock));
  r.best_step_s = best_step;
  r.best_fwd_bwd_s = best_fb;
  r.train_flops_per_position = m->train_flops_per_position(r.seq_len);
  r.activation_bytes = ws->activation_bytes();
  r.scratch_bytes = ws->scratch_bytes();
  return r;
}

}  // namespace zerodp::bench
