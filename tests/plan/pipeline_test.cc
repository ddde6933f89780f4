// SPDX-License-Identifier: Apache-2.0
// The pipeline's plan (plan/pipeline.h): the bubble and the micro-batches in
// flight by their formulas, the balanced cut against every cut, and a GPT's
// stages adding up to the whole model's parameters and activations.
#include "plan/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "plan/activations.h"
#include "plan/engine_memory.h"

namespace zerodp::plan {
namespace {

GptShape gpt2_124m() { return gpt_shape(model::require_gpt(model::model_preset("gpt2-124m"), "test")); }

PipelineConfig gpt2_config(int ranks, int stages, int micro_batches) {
  PipelineConfig c;
  c.shape = gpt2_124m();
  c.ranks = ranks;
  c.stages = stages;
  c.micro_batches = micro_batches;
  c.micro_batch = 2;
  c.seq_len = 128;
  return c;
}

TEST(Pipeline, TheBubbleAndTheMicroBatchesInFlightFollowTheirFormulas) {
  EXPECT_DOUBLE_EQ(bubble_fraction(2, 8), 1.0 / 9);
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 4), 3.0 / 7);
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 5), 0.0);
  std::vector<int> one_f_one_b, gpipe;
  for (int s = 0; s < 4; ++s) {
    one_f_one_b.push_back(micro_batches_in_flight(PipelineSchedule::kOneFOneB, 4, s, 8));
    gpipe.push_back(micro_batches_in_flight(PipelineSchedule::kGpipe, 4, s, 8));
  }
  EXPECT_EQ(one_f_one_b, (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(gpipe, (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(micro_batches_in_flight(PipelineSchedule::kOneFOneB, 4, 0, 2), 2);  // M < P
  EXPECT_EQ(parse_pipeline_schedule("gpipe"), PipelineSchedule::kGpipe);
  EXPECT_EQ(pipeline_schedule_name(parse_pipeline_schedule("1f1b")), "1f1b");
  EXPECT_THROW(parse_pipeline_schedule("zb-h1"), ConfigError);
}

// The largest part of a cut.
double largest_part(std::span<const double> costs, const std::vector<size_t>& first) {
  double worst = 0;
  for (size_t k = 0; k < first.size(); ++k) {
    const size_t end = k + 1 < first.size() ? first[k + 1] : costs.size();
    double sum = 0;
    for (size_t i = first[k]; i < end; ++i) sum += costs[i];
    worst = std::max(worst, sum);
  }
  return worst;
}

TEST(Pipeline, TheBalancedCutIsTheBestContiguousCut) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 9;
    const int parts = 1 + static_cast<int>(rng() % n);
    std::vector<double> costs(n);
    for (double& c : costs) c = cost(rng);
    const std::vector<size_t> cut = balanced_cut(costs, parts);
    ASSERT_EQ(cut.size(), static_cast<size_t>(parts));
    EXPECT_EQ(cut.front(), 0u);
    for (size_t k = 1; k < cut.size(); ++k) EXPECT_LT(cut[k - 1], cut[k]) << "an empty part";
    // Every cut into `parts` non-empty parts: none has a smaller largest part.
    double best = std::numeric_limits<double>::infinity();
    std::vector<size_t> first{0};
    std::function<void(size_t)> each = [&](size_t from) {
      if (first.size() == static_cast<size_t>(parts)) {
        best = std::min(best, largest_part(costs, first));
        return;
      }
      for (size_t i = from; i + (static_cast<size_t>(parts) - first.size()) <= n; ++i) {
        first.push_back(i);
        each(i + 1);
        first.pop_back();
      }
    };
    each(1);
    EXPECT_DOUBLE_EQ(largest_part(costs, cut), best) << "trial " << trial;
  }
  EXPECT_THROW(balanced_cut(std::vector<double>{1, 2}, 3), ConfigError);
}

// One stage is the whole model: its parameters are Φ, its states at ZeRO 1
// are the engine's stage-1 states with the step's accumulation, and its
// activations the family's whole estimate, split into blocks, ends and
// scratch and added up again.
TEST(Pipeline, OneStageIsTheWholeModel) {
  const PipelineConfig c = gpt2_config(4, 1, 8);
  const PipelinePlan p = plan_pipeline(c);
  ASSERT_EQ(p.stages.size(), 1u);
  const PipelineStagePlan& s = p.stages[0];
  EXPECT_EQ(s.params, c.shape.num_params());
  EXPECT_TRUE(s.embedding && s.head);
  EXPECT_EQ(s.layers, 12);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_DOUBLE_EQ(p.bubble, 0.0);
  EXPECT_EQ(s.sent_per_step, 0u);
  EXPECT_EQ(p.tied_embedding_elements, 0u);
  ActivationConfig a;
  a.micro_batch = 2;
  a.seq_len = 128;
  EXPECT_EQ(s.activations, estimate_activations(c.shape, a).total_bytes);
  a.include_backward_scratch = false;
  EXPECT_EQ(s.activations - s.scratch, estimate_activations(c.shape, a).total_bytes);
  EngineRun run{Stage::k1, 4, c.precision, c.optimizer, /*grad_accum=*/8};
  const RankPrediction engine = predict_engine_rank(gpt_unit_schedule(c.shape), run, 0, 0);
  EXPECT_EQ(s.states[1].total(), engine.model_states());
}

// Two stages: the parameters are the model's and the tied embedding's copy,
// the kept activations of one micro-batch the model's and the second
// stage's input, each workspace's own scratch beside them; 1F1B holds two
// micro-batches at stage 0 and one at stage 1, GPipe all eight; each stage
// sends M residual streams one way, the last stage M fp32 parts of the
// tied embedding's gradient, the first its updated weights once.
TEST(Pipeline, TwoStagesAddUpToTheModel) {
  PipelineConfig c = gpt2_config(4, 2, 8);
  const PipelinePlan one = plan_pipeline(gpt2_config(4, 1, 8));
  const PipelinePlan p = plan_pipeline(c);
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.replicas, 2);
  const PipelineStagePlan &a = p.stages[0], &b = p.stages[1];
  EXPECT_TRUE(a.embedding && !a.head && !b.embedding && b.head);
  EXPECT_EQ(a.layers + b.layers, 12);
  EXPECT_EQ(b.first_layer, a.layers);
  const uint64_t embedding = c.shape.embedding_params();
  EXPECT_EQ(a.params + b.params, c.shape.num_params() + embedding);
  EXPECT_EQ(p.tied_embedding_elements, embedding);
  const uint64_t stream = 2ull * 128 * 768 * 4;  // B x T x C fp32
  EXPECT_EQ(a.activations_per_micro + b.activations_per_micro, one.stages[0].activations_per_micro + stream);
  EXPECT_EQ(a.scratch, one.stages[0].scratch);
  EXPECT_EQ(a.activations, 2 * (a.activations_per_micro + a.scratch));
  EXPECT_EQ(a.in_flight, 2);
  EXPECT_EQ(b.in_flight, 1);
  EXPECT_DOUBLE_EQ(a.forward_flops + b.forward_flops, one.stages[0].forward_flops);
  EXPECT_EQ(a.sent_per_step, 8 * stream + embedding * c.precision.size());
  EXPECT_EQ(b.sent_per_step, 8 * stream + 8 * embedding * 4);
  EXPECT_DOUBLE_EQ(p.bubble, 1.0 / 9);
  c.schedule = PipelineSchedule::kGpipe;
  const PipelinePlan g = plan_pipeline(c);
  EXPECT_EQ(g.stages[0].in_flight, 8);
  EXPECT_GT(g.stages[0].activations, a.activations);
  // ZeRO 1 among the D = 2 replicas of a stage divides its optimizer states.
  EXPECT_LT(a.states[1].total(), a.states[0].total());
  EXPECT_EQ(p.peak[1], std::max(a.peak[1], b.peak[1]));
}

// --pipeline-balance memory: the cut whose busiest rank's peak (ZeRO 1) is
// the least of every cut; for gpt2-124m under 1F1B, where the first stage
// holds two micro-batches, it gives the first stage fewer blocks than the
// FLOP-balanced cut, and a lower peak.
TEST(Pipeline, TheMemoryBalancedCutHasTheLeastPeak) {
  PipelineConfig c = gpt2_config(4, 2, 4);
  c.micro_batch = 4;
  c.seq_len = 256;
  c.precision = Dtype::fp32();
  const PipelinePlan flops = plan_pipeline(c);
  c.balance = PipelineBalance::kMemory;
  const PipelinePlan memory = plan_pipeline(c);
  EXPECT_LT(memory.stages[0].layers, flops.stages[0].layers);
  EXPECT_LT(memory.peak[1], flops.peak[1]);
  uint64_t least = UINT64_MAX;
  c.balance = PipelineBalance::kFlops;
  for (int first = 1; first < 12; ++first) {
    c.layers_per_stage = {first, 12 - first};
    least = std::min(least, plan_pipeline(c).peak[1]);
  }
  EXPECT_EQ(memory.peak[1], least);
  EXPECT_EQ(parse_pipeline_balance("memory"), PipelineBalance::kMemory);
  EXPECT_EQ(pipeline_balance_name(parse_pipeline_balance("flops")), "flops");
  EXPECT_THROW(parse_pipeline_balance("time"), ConfigError);
}

TEST(Pipeline, AGivenCutIsFollowedAndABadOneRefused) {
  PipelineConfig c = gpt2_config(4, 2, 4);
  c.layers_per_stage = {6, 6};
  const PipelinePlan p = plan_pipeline(c);
  EXPECT_EQ(p.stages[0].layers, 6);
  EXPECT_EQ(p.stages[1].first_layer, 6);
  for (const std::vector<int>& bad : {std::vector<int>{6, 5}, {12, 0}, {4, 4, 4}}) {
    c.layers_per_stage = bad;
    EXPECT_THROW(plan_pipeline(c), ConfigError);
  }
  c.layers_per_stage.clear();
  c.stages = 3;  // does not divide N = 4
  EXPECT_THROW(plan_pipeline(c), ConfigError);
  c.ranks = 13 * 3;
  c.stages = 13;  // more stages than blocks
  EXPECT_THROW(plan_pipeline(c), ConfigError);
}

// The most blocks that fit a budget: the depth whose peak it is fits, one
// more does not.
TEST(Pipeline, TheLargestDepthThatFitsIsExact) {
  for (const int stages : {1, 2}) {
    PipelineConfig c = gpt2_config(4, stages, 8);
    const uint64_t budget = plan_pipeline(c).peak[1];
    const int most = largest_layers_that_fit(c, budget);
    EXPECT_GE(most, 12) << stages;
    c.shape.layers = most + 1;
    EXPECT_GT(plan_pipeline(c).peak[1], budget) << stages;
  }
  // A budget no depth reaches is answered at the cap, at once.
  EXPECT_EQ(largest_layers_that_fit(gpt2_config(4, 2, 8), uint64_t{1} << 62), kMostPipelineLayers);
  EXPECT_EQ(largest_layers_that_fit(gpt2_config(4, 2, 8), 1), 0);
}

// The step: each micro-batch through every stage once and through the
// slowest M - 1 more times, the sends between stages over the link their
// ranks share, then the replicas' reduction, the tied embedding's sum and
// the optimizer; one stage waits for nothing.
TEST(Pipeline, TheStepTimeIsTheScheduleThenTheReductions) {
  Hardware hw;
  hw.gemm_flops = 1e11;
  hw.ranks_per_host = 2;  // D = 2: one pipeline stage per host
  hw.link = {.latency_s = 1e-4, .bandwidth = 1.25e8, .source = "test"};
  hw.local = {.latency_s = 1e-6, .bandwidth = 1e10, .source = "test"};
  hw.optimizer_s_per_param = 1e-9;
  const PipelinePlan p = plan_pipeline(gpt2_config(4, 2, 8));
  const PipelineStepTime t = predict_pipeline_step(p, Stage::k1, hw);
  ASSERT_EQ(t.stage_s.size(), 2u);
  ASSERT_EQ(t.send_s.size(), 1u);
  EXPECT_DOUBLE_EQ(t.stage_s[0], 3 * p.stages[0].forward_flops / 1e11);
  const double stream = 2.0 * 128 * 768 * 4;
  EXPECT_DOUBLE_EQ(t.send_s[0], 2 * (1e-4 + stream * 2 / 1.25e8)) << "across hosts, both replicas on one link";
  const double a = t.stage_s[0] + t.send_s[0], b = t.stage_s[1];
  EXPECT_DOUBLE_EQ(t.schedule_s, a + b + 7 * std::max(a, b));
  EXPECT_DOUBLE_EQ(t.bubble, 1 - 8 * std::max(a, b) / t.schedule_s);
  EXPECT_GT(t.tied_s, 0.0);
  EXPECT_DOUBLE_EQ(t.step_s, t.schedule_s + t.reduce_s + t.tied_s);
  // ZeRO 1 updates half of a stage's elements, ZeRO 0 all of them.
  EXPECT_LT(predict_pipeline_step(p, Stage::k1, hw).reduce_s, predict_pipeline_step(p, Stage::k0, hw).reduce_s + 1e-9);
  EXPECT_THROW(predict_pipeline_step(p, Stage::k2, hw), ConfigError);
  // Both stages on one host: the sends go through shared memory.
  hw.ranks_per_host = 4;
  EXPECT_DOUBLE_EQ(predict_pipeline_step(p, Stage::k1, hw).send_s[0], 2 * (1e-6 + stream / 1e10));
  hw.link = {};
  hw.ranks_per_host = 2;
  EXPECT_THROW(predict_pipeline_step(p, Stage::k1, hw), ConfigError) << "no link between the stages' hosts";
  // One stage: M micro-batches back to back, nothing idle, nothing tied.
  const PipelineStepTime one = predict_pipeline_step(plan_pipeline(gpt2_config(2, 1, 8)), Stage::k1, hw);
  EXPECT_DOUBLE_EQ(one.schedule_s, 8 * one.stage_s[0]);
  EXPECT_NEAR(one.bubble, 0.0, 1e-12);
  EXPECT_EQ(one.tied_s, 0.0);
}

}  // namespace
}  // namespace zerodp::plan
