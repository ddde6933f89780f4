// SPDX-License-Identifier: Apache-2.0
// The pipeline's plan held against its engines' ledgers: GPT models cut
// into 2 and 3 stages of 1 and 2 replicas, ZeRO 0 and 1, fp32 and bf16,
// both schedules, with and without accumulation and the end's gather, and
// bf16 products keeping their inputs as bf16 (--compute bf16); two
// steps of zero::Pipeline on thread ranks, the comm thread off, and every
// rank's ledger equal, category by category, to plan's prediction for that
// rank (plan/pipeline_memory.h).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <vector>

#include "comm/world.h"
#include "kernels/compute.h"
#include "ledger_expect.h"
#include "model/gpt.h"
#include "model/gpt_family.h"
#include "plan/model_shape.h"
#include "plan/pipeline_memory.h"
#include "zero/pipeline.h"

namespace zerodp::plan::plan_vs_ledger_pipeline {
namespace {

using zero::MemoryCategory;

struct Case {
  model::GptConfig gpt;
  int stages, replicas, micro_batches;
  PipelineSchedule schedule;
  Stage zero;
  Dtype dtype;
  bool gather;  // the end's consolidated copy
  bool bf16_compute = false;
};

std::string describe(const Case& c) {
  return fmt::format("L={} P={} D={} M={} {} ZeRO {} {} gather={} compute={}", c.gpt.layers, c.stages, c.replicas,
                     c.micro_batches, pipeline_schedule_name(c.schedule), stage_number(c.zero), c.dtype.name(),
                     c.gather, c.bf16_compute ? "bf16" : "fp32");
}

constexpr int kBatch = 2, kSeq = 7;

void expect_ledger_matches(const Case& c) {
  SCOPED_TRACE(describe(c));
  PipelineConfig pc;
  pc.shape = gpt_shape(c.gpt);
  pc.ranks = c.stages * c.replicas;
  pc.stages = c.stages;
  pc.schedule = c.schedule;
  pc.micro_batches = c.micro_batches;
  pc.micro_batch = kBatch;
  pc.seq_len = kSeq;
  pc.precision = c.dtype;
  pc.bf16_compute = c.bf16_compute;
  const PipelinePlan plan = plan_pipeline(pc);
  zero::PipelineLayout layout{c.stages, c.schedule, {}};
  for (size_t s = 1; s < plan.stages.size(); ++s) layout.cuts.push_back(plan.stages[s].first_layer + 1);

  const model::Gpt gpt(c.gpt);
  zero::EngineConfig ec;
  ec.stage = c.zero;
  ec.dtype = c.dtype;
  ec.compute = c.bf16_compute ? kernels::Compute::kBf16 : kernels::Compute::kFp32;
  ec.grad_accum = c.micro_batches;
  ec.overlap = false;
  ec.bucket_elements = 3000;
  std::vector<zero::LedgerSnapshot> measured(static_cast<size_t>(pc.ranks));
  comm::run_thread_ranks(pc.ranks, {}, [&](comm::Communicator& comm) {
    zero::Pipeline pipe(gpt, comm, ec, layout, /*seed=*/3, kBatch, kSeq);
    const zero::BatchFeeder feed = [&](model::Workspace& ws, int micro) {
      std::vector<int32_t> tokens(kBatch * kSeq), targets(kBatch * kSeq);
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(micro)) % static_cast<size_t>(c.gpt.vocab));
        targets[i] = static_cast<int32_t>((i * 5 + 1) % static_cast<size_t>(c.gpt.vocab));
      }
      ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
    };
    pipe.train_step(feed);
    pipe.train_step(feed);
    if (c.gather) pipe.gather_params_to(0);
    measured[static_cast<size_t>(comm.rank())] = pipe.engine().ledger().snapshot();
  });
  const EngineRun run{.stage = c.zero,
                      .dtype = c.dtype,
                      .optimizer = ec.optimizer,
                      .bucket_elements = ec.bucket_elements,
                      .consolidated_copy = c.gather};
  for (int r = 0; r < pc.ranks; ++r) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    const zero::LedgerSnapshot& s = measured[static_cast<size_t>(r)];
    const RankPrediction p = predict_pipeline_rank(plan, run, r);
    expect_states_and_activations(s, p);
    EXPECT_EQ(s[MemoryCategory::kComm].current, p.comm) << "comm current";
    EXPECT_EQ(s[MemoryCategory::kComm].peak, p.comm) << "comm peak";
    EXPECT_EQ(s[MemoryCategory::kGathered].peak, p.gathered) << "gathered peak";
    EXPECT_EQ(s[MemoryCategory::kScratch].peak, p.scratch()) << "scratch peak";
    EXPECT_EQ(s[MemoryCategory::kBuckets].peak, p.buckets) << "buckets peak";
    EXPECT_EQ(s.total.peak, p.total()) << "total peak";
  }
  // The plan's per-stage peak is the stage's replica 0's at the engine's
  // defaults.
  const EngineRun defaults{.stage = c.zero, .dtype = c.dtype, .optimizer = ec.optimizer};
  for (size_t st = 0; st < plan.stages.size(); ++st) {
    const size_t z = c.zero == Stage::k0 ? 0 : 1;
    EXPECT_EQ(plan.stages[st].peak[z],
              predict_pipeline_rank(plan, defaults, static_cast<int>(st) * c.replicas).total());
  }
}

TEST(PlanVsLedgerPipeline, EveryStageOfEveryLayoutMatchesExactly) {
  // Odd sizes: 3 heads of 7 channels, vocab 37 padded to 41, context 13.
  const model::GptConfig odd{13, 37, 41, 3, 3, 21};
  const model::GptConfig four{16, 50, 64, 4, 2, 16};
  const auto one_f = PipelineSchedule::kOneFOneB, gpipe = PipelineSchedule::kGpipe;
  for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
    for (Stage z : {Stage::k0, Stage::k1}) {
      expect_ledger_matches({odd, 2, 1, 1, one_f, z, dt, false});
      expect_ledger_matches({odd, 2, 2, 3, one_f, z, dt, true});
      expect_ledger_matches({odd, 3, 1, 4, gpipe, z, dt, false});
      expect_ledger_matches({four, 2, 2, 4, gpipe, z, dt, true});
      expect_ledger_matches({four, 3, 1, 5, one_f, z, dt, false});
    }
  }
}

// --compute bf16: every stage with blocks keeps their product inputs in
// bf16 and holds the two fp32 working buffers they share once; a stage of
// the head alone holds neither.
TEST(PlanVsLedgerPipeline, Bf16ComputeKeepsEachStagesProductInputsInBf16) {
  const model::GptConfig odd{13, 37, 41, 3, 3, 21};
  const model::GptConfig four{16, 50, 64, 4, 2, 16};
  const auto one_f = PipelineSchedule::kOneFOneB, gpipe = PipelineSchedule::kGpipe;
  for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
    for (Stage z : {Stage::k0, Stage::k1}) {
      expect_ledger_matches({odd, 2, 2, 3, one_f, z, dt, true, true});
      expect_ledger_matches({odd, 3, 1, 4, gpipe, z, dt, false, true});
      expect_ledger_matches({four, 2, 1, 2, one_f, z, dt, false, true});
    }
  }
}

// A stage workspace at bf16 compute is the plan's: its blocks' kept inputs
// at half their bytes and the working buffers once where it has blocks; a
// stage of the head alone is the same as at fp32.
TEST(PlanVsLedgerPipeline, Bf16ComputeWorkspaceIsTheStageModelsOwn) {
  const model::GptConfig four{16, 50, 64, 4, 2, 16};
  PipelineConfig pc;
  pc.shape = gpt_shape(four);
  pc.ranks = 2;
  pc.stages = 2;
  pc.micro_batch = kBatch;
  pc.seq_len = kSeq;
  pc.bf16_compute = true;
  const PipelinePlan plan = plan_pipeline(pc);
  const model::Gpt gpt(four);
  const model::WorkspaceOptions bf16{.micro_batch = kBatch, .seq_len = kSeq, .bf16_product_inputs = true};
  // Stage 0 (the embedding and blocks), stage 1 (blocks and the head), and a
  // stage of the head alone (cut before the final norm), which keeps no
  // product input and holds no working buffer.
  const int ops = static_cast<int>(gpt.ops().size());
  const int cut = plan.stages[1].first_layer + 1;
  EXPECT_EQ(gpt.make_stage_workspace(bf16, 0, cut)->total_bytes(), stage_workspace_bytes(pc, plan.stages[0]));
  EXPECT_EQ(gpt.make_stage_workspace(bf16, cut, ops)->total_bytes(), stage_workspace_bytes(pc, plan.stages[1]));
  const ActivationSplit act = split_activations(pc);
  EXPECT_GT(act.block_working, 0U);
  EXPECT_EQ(gpt.make_stage_workspace(bf16, ops - 2, ops)->total_bytes(), workspace_bytes(act, 0, true));
  pc.bf16_compute = false;
  const ActivationSplit fp32 = split_activations(pc);
  EXPECT_EQ(fp32.block_working, 0U);
  EXPECT_LT(act.per_block, fp32.per_block);
  EXPECT_EQ(workspace_bytes(act, 0, true), workspace_bytes(fp32, 0, true));
}

}  // namespace
}  // namespace zerodp::plan::plan_vs_ledger_pipeline
