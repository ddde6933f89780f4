// SPDX-License-Identifier: Apache-2.0
// bench::run_model_bench on tiny models, and its text and JSON forms.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/model_bench.h"
#include "bench/model_bench_format.h"
#include "core/error.h"
#include "plan/calibration.h"

namespace zerodp::bench {
namespace {

ModelBenchOptions tiny(const std::string& model) {
  ModelBenchOptions o;
  o.model = model;
  o.batch = 2;
  o.seq = 8;
  o.steps = 2;
  o.warmup = 1;
  o.sgemm_size = 64;
  return o;
}

TEST(ModelBench, GptStepsGivePositiveTimesAndAProfile) {
  const ModelBenchResult r = run_model_bench(tiny("gpt-tiny"));
  EXPECT_EQ(r.model, "gpt-tiny");
  EXPECT_TRUE(r.is_gpt);
  EXPECT_GT(r.num_params, 0u);
  EXPECT_EQ(r.seq_len, 8);
  EXPECT_EQ(r.positions, 16u);
  EXPECT_EQ(r.steps, 2);
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_GT(r.sgemm_gflops, 0);
  EXPECT_GT(r.train_flops_per_position, 0);
  EXPECT_GT(r.forward_s, 0);
  EXPECT_GT(r.backward_s, 0);
  EXPECT_GT(r.adamw_s, 0);
  EXPECT_GT(r.best_step_s, 0);
  EXPECT_LE(r.best_fwd_bwd_s, r.best_step_s);
  EXPECT_GT(r.profile.total_seconds(), 0);
  EXPECT_GT(r.activation_bytes, 0u);

  const std::string text = format_model_bench_text(r);
  EXPECT_EQ(text.rfind("model        gpt-tiny (", 0), 0u) << text;
  EXPECT_NE(text.find("batch        B=2 T=8 (16 tokens per step), checkpointing off"), std::string::npos) << text;
  EXPECT_NE(text.find("sgemm        "), std::string::npos);
  EXPECT_NE(text.find("(n=64, same run)"), std::string::npos);
  EXPECT_NE(text.find("\nadamw "), std::string::npos);

  const auto j = nlohmann::json::parse(format_model_bench_json(r));
  EXPECT_EQ(j["model"], "gpt-tiny");
  EXPECT_EQ(j["num_params"], r.num_params);
  EXPECT_EQ(j["seq_len"], 8);
  EXPECT_GT(j["positions_per_s"].get<double>(), 0);
  EXPECT_GT(j["seconds_per_step"]["forward"].get<double>(), 0);
  EXPECT_TRUE(j["kernels"].is_object());
  // What plan --calibrate-model reads of it.
  const plan::ModelMeasurement m = plan::model_measurement_from_json(j, "test");
  EXPECT_EQ(m.num_params, r.num_params);
  EXPECT_EQ(m.seq_len, 8);
  EXPECT_DOUBLE_EQ(m.sgemm_flops, r.sgemm_gflops * 1e9);
  EXPECT_NEAR(m.forward_s + m.backward_s, (r.forward_s + r.backward_s) / r.steps, 1e-12);
}

// The wall clock on request: every figure on it, and the forms say which.
TEST(ModelBench, TimesOnTheClockAsked) {
  ModelBenchOptions o = tiny("gpt-tiny");
  EXPECT_EQ(o.clock, ClockKind::kThreadCpu);  // the default
  EXPECT_NE(format_model_bench_text(run_model_bench(o)).find("clock        the thread's CPU time"), std::string::npos);
  o.clock = ClockKind::kWall;
  const ModelBenchResult r = run_model_bench(o);
  EXPECT_EQ(r.clock, ClockKind::kWall);
  EXPECT_EQ(r.profile.clock(), ClockKind::kWall);
  EXPECT_GT(r.best_step_s, 0);
  EXPECT_GT(r.profile.total_seconds(), 0);
  EXPECT_NE(format_model_bench_text(r).find("clock        wall (--clock wall)"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(format_model_bench_json(r))["clock"], "wall");
}

TEST(ModelBench, AnMlpCountsSamples) {
  const ModelBenchResult r = run_model_bench(tiny("mlp-small"));
  EXPECT_FALSE(r.is_gpt);
  EXPECT_EQ(r.seq_len, 1);
  EXPECT_EQ(r.positions, 2u);
  EXPECT_GT(r.forward_s + r.backward_s, 0);
  EXPECT_NE(format_model_bench_text(r).find("(2 samples per step)"), std::string::npos);
}

TEST(ModelBench, RefusesNoStepsAndUnknownModels) {
  ModelBenchOptions o = tiny("gpt-tiny");
  o.steps = 0;
  EXPECT_THROW(run_model_bench(o), ConfigError);
  EXPECT_THROW(run_model_bench(tiny("no-such-model")), ConfigError);
}

}  // namespace
}  // namespace zerodp::bench
