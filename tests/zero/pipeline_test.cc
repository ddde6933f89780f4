// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism with ZeRO (zero/pipeline.h): a pipelined GPT gives the
// bits of data parallelism with the same global batch, under both schedules,
// at ZeRO stages 0 and 1, with the tied embedding split between the end
// stages; and layouts that do not fit are refused.
#include "zero/pipeline.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "comm/world.h"
#include "kernels/compute.h"
#include "model/gpt.h"
#include "zero/engine.h"
#include "zero/pipeline_test_util.h"

namespace zerodp::zero::pipeline_test {
namespace {

using testing::expect_same_bits;
using testing::feed_global;
using testing::Trained;
constexpr int kSteps = 3;
constexpr int kSeq = testing::kPipeSeq, kBatch = testing::kPipeBatch;
model::GptConfig small_gpt() { return testing::small_pipeline_gpt(); }

EngineConfig engine_config(Stage stage, Dtype dtype, int accum, kernels::Compute compute = kernels::Compute::kFp32) {
  EngineConfig c;
  c.stage = stage;
  c.dtype = dtype;
  c.compute = compute;
  c.grad_accum = accum;
  c.clip_norm = 0.5;  // clipped steps: the norm crosses the stages
  c.lr_schedule.max_lr = 1e-2;
  return c;
}

// Data parallelism on n ranks, `accum` micro-batches each: rank r's
// micro-batch m is global m * n + r.
Trained data_parallel(int n, Stage stage, Dtype dtype, int accum, kernels::Compute compute = kernels::Compute::kFp32) {
  const model::Gpt gpt(small_gpt());
  Trained run;
  comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
    Engine engine(gpt, comm, engine_config(stage, dtype, accum, compute), /*seed=*/11, kBatch, kSeq);
    Trained mine;
    for (int64_t step = 0; step < kSteps; ++step) {
      const StepResult r = engine.train_step(
          [&](model::Workspace& ws, int micro) { feed_global(ws, step, int64_t{micro} * n + comm.rank()); });
      mine.losses.push_back(r.loss);
      mine.norms.push_back(r.grad_norm);
    }
    mine.master = engine.gather_master_params();
    if (comm.rank() == 0) run = mine;
  });
  return run;
}

Trained pipelined(int stages, int replicas, std::vector<int> cuts, PipelineSchedule schedule, Stage stage, Dtype dtype,
                  int accum, kernels::Compute compute = kernels::Compute::kFp32) {
  const model::Gpt gpt(small_gpt());
  Trained run;
  comm::run_thread_ranks(stages * replicas, {}, [&](comm::Communicator& comm) {
    Pipeline pipe(gpt, comm, engine_config(stage, dtype, accum, compute), {stages, schedule, cuts}, /*seed=*/11, kBatch,
                  kSeq);
    Trained mine;
    for (int64_t step = 0; step < kSteps; ++step) {
      const StepResult r = pipe.train_step([&](model::Workspace& ws, int micro) {
        feed_global(ws, step, int64_t{micro} * pipe.replicas() + pipe.replica());
      });
      mine.losses.push_back(r.loss);
      mine.norms.push_back(r.grad_norm);
    }
    mine.master = pipe.gather_master_params();
    if (comm.rank() == 0) run = mine;
  });
  return run;
}

TEST(Pipeline, TwoStagesGiveTheBitsOfDataParallelism) {
  const Trained dp = data_parallel(2, Stage::k0, Dtype::fp32(), 4);
  for (PipelineSchedule schedule : {PipelineSchedule::kOneFOneB, PipelineSchedule::kGpipe}) {
    for (Stage stage : {Stage::k0, Stage::k1}) {
      expect_same_bits(
          pipelined(2, 2, {3}, schedule, stage, Dtype::fp32(), 4), dp,
          std::string(pipeline_schedule_name(schedule)) + " P=2 D=2 ZeRO " + std::to_string(static_cast<int>(stage)));
    }
  }
}

TEST(Pipeline, AtFp32EveryPowerOfTwoGivesTheSameBits) {
  // 8 global micro-batches: data parallelism on 4 ranks x 2, a pipeline of
  // 2 stages x 2 replicas x 4, of 4 stages x 1 replica x 8 (its last stage
  // holds only the final norm and the head).
  const Trained dp = data_parallel(4, Stage::k1, Dtype::fp32(), 2);
  expect_same_bits(pipelined(2, 2, {2}, PipelineSchedule::kOneFOneB, Stage::k1, Dtype::fp32(), 4), dp, "P=2 D=2");
  expect_same_bits(pipelined(4, 1, {1, 3, 5}, PipelineSchedule::kOneFOneB, Stage::k0, Dtype::fp32(), 8), dp, "P=4 D=1");
  expect_same_bits(pipelined(3, 1, {2, 4}, PipelineSchedule::kGpipe, Stage::k1, Dtype::fp32(), 8), dp, "P=3 D=1");
}

// One micro-batch a step at fp32 and ZeRO 0: the engine accumulates into
// the gradient buffer itself (no scratch), where the tied seed lands too.
TEST(Pipeline, OneMicroBatchInPlaceGivesTheSameBits) {
  const Trained dp = data_parallel(2, Stage::k0, Dtype::fp32(), 1);
  expect_same_bits(pipelined(2, 2, {3}, PipelineSchedule::kOneFOneB, Stage::k0, Dtype::fp32(), 1), dp, "P=2 D=2 M=1");
  expect_same_bits(pipelined(2, 2, {3}, PipelineSchedule::kGpipe, Stage::k1, Dtype::fp32(), 1), dp,
                   "P=2 D=2 M=1 ZeRO 1");
}

TEST(Pipeline, MixedPrecisionGivesTheBitsOfItsReplicaCount) {
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp16()}) {
    const Trained dp = data_parallel(2, Stage::k1, dtype, 3);
    expect_same_bits(pipelined(2, 2, {4}, PipelineSchedule::kOneFOneB, Stage::k1, dtype, 3), dp,
                     std::string(dtype.name()) + " P=2 D=2");
  }
}

// bf16 products (--compute bf16): each stage keeps its blocks' product
// inputs as bf16 operands, and the pipeline still gives data parallelism's
// bits, a stage of the head alone included; fp32 products give others.
TEST(Pipeline, Bf16ProductsGiveTheBitsOfDataParallelism) {
  const auto bf16 = kernels::Compute::kBf16;
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    const Trained dp = data_parallel(2, Stage::k1, dtype, 4, bf16);
    const std::string what = std::string(dtype.name()) + " compute bf16";
    expect_same_bits(pipelined(2, 2, {3}, PipelineSchedule::kOneFOneB, Stage::k1, dtype, 4, bf16), dp,
                     what + " P=2 D=2");
    expect_same_bits(pipelined(2, 2, {5}, PipelineSchedule::kGpipe, Stage::k0, dtype, 4, bf16), dp,
                     what + " P=2 D=2, a stage of the head alone");
    EXPECT_NE(data_parallel(2, Stage::k1, dtype, 4).losses, dp.losses) << what << ": the products were fp32";
  }
}

TEST(Pipeline, LayoutsThatDoNotFitAreRefused) {
  const model::Gpt gpt(small_gpt());
  auto refused = [&](int n, PipelineLayout layout, Stage stage) {
    bool threw = false;
    comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
      try {
        Pipeline pipe(gpt, comm, engine_config(stage, Dtype::fp32(), 2), layout, 1, kBatch, kSeq);
      } catch (const ConfigError&) {
        if (comm.rank() == 0) threw = true;
        comm.abort("refused");
      }
    });
    return threw;
  };
  EXPECT_TRUE(refused(3, {2, PipelineSchedule::kOneFOneB, {3}}, Stage::k1));  // 2 does not divide 3
  EXPECT_TRUE(refused(2, {2, PipelineSchedule::kOneFOneB, {6}}, Stage::k1));  // ln_f and the head stay together
  EXPECT_TRUE(refused(2, {2, PipelineSchedule::kOneFOneB, {0}}, Stage::k1));
  EXPECT_TRUE(refused(2, {2, PipelineSchedule::kOneFOneB, {}}, Stage::k1));
  EXPECT_TRUE(refused(2, {2, PipelineSchedule::kOneFOneB, {3}}, Stage::k2));
  EXPECT_TRUE(refused(2, {2, PipelineSchedule::kOneFOneB, {3}}, Stage::k3));
}

}  // namespace
}  // namespace zerodp::zero::pipeline_test
