// SPDX-License-Identifier: Apache-2.0
// Checkpoints of pipelined runs (engine_ckpt/pipeline_checkpoint.h): a
// pipeline of P stages over D replicas writes the checkpoint D-rank data
// parallelism writes, record for record, and a run resumes from it in any
// layout (another pipeline, data parallelism at any N and stage), and a
// pipeline resumes from a data-parallel one, with the bits of the run that
// never stopped.
#include "engine_ckpt/pipeline_checkpoint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/manifest.h"
#include "ckpt/offline.h"
#include "ckpt_test_util.h"
#include "comm/world.h"
#include "model/gpt.h"
#include "zero/pipeline.h"
#include "zero/pipeline_test_util.h"

namespace zerodp::ckpt::testing {
namespace {

using zero::testing::expect_same_bits;
using zero::testing::feed_global;
using zero::testing::Trained;
constexpr int kSeq = zero::testing::kPipeSeq, kBatch = zero::testing::kPipeBatch;
model::GptConfig small_gpt() { return zero::testing::small_pipeline_gpt(); }

// A run's layout: `stages` pipeline stages (0: plain data parallelism) over
// `replicas` data-parallel ranks, `accum` micro-batches per replica a step.
struct Layout {
  int stages = 0, replicas = 1;
  std::vector<int> cuts = {};
  Stage stage = Stage::k1;
  int accum = 1;
  std::string name() const {
    return stages == 0 ? fmt::format("DP N={} ZeRO {}", replicas, static_cast<int>(stage))
                       : fmt::format("P={} D={} ZeRO {}", stages, replicas, static_cast<int>(stage));
  }
};

zero::EngineConfig config_of(const Layout& l, optim::OptimizerKind optimizer) {
  zero::EngineConfig c = test_config(static_cast<int>(l.stage));
  c.optimizer.kind = optimizer;
  c.optimizer.adam.min_8bit_size = 1000;  // 8-bit Adam: the large units 8-bit, the norms fp32 (per-unit tensors)
  c.grad_accum = l.accum;
  c.clip_norm = 0.5;
  return c;
}

// Steps [first, end) of the run in layout `l`, from `load` (a checkpoint;
// empty: the seed's start), saving to `save` at the end (empty: no save).
Trained run(const Layout& l, int64_t first, int64_t end, const std::string& load, const std::string& save_root,
            optim::OptimizerKind optimizer = optim::OptimizerKind::kAdamW) {
  const model::Gpt gpt(small_gpt());
  const int n = l.replicas * std::max(l.stages, 1);
  Trained run;
  comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
    std::unique_ptr<zero::Trainable> trainee;
    int replica = comm.rank();
    if (l.stages > 0) {
      auto pipe = std::make_unique<zero::Pipeline>(gpt, comm, config_of(l, optimizer),
                                                   zero::PipelineLayout{l.stages, PipelineSchedule::kOneFOneB, l.cuts},
                                                   /*seed=*/11, kBatch, kSeq);
      replica = pipe->replica();
      trainee = std::move(pipe);
    } else {
      trainee = std::make_unique<zero::Engine>(gpt, comm, config_of(l, optimizer), /*seed=*/11, kBatch, kSeq);
    }
    if (!load.empty()) {
      EXPECT_EQ(engine_ckpt::load(*trainee, load).step, first);
    }
    Trained mine;
    for (int64_t step = first; step < end; ++step) {
      mine.losses.push_back(trainee
                                ->train_step([&](model::Workspace& ws, int micro) {
                                  feed_global(ws, step, int64_t{micro} * l.replicas + replica);
                                })
                                .loss);
    }
    if (!save_root.empty()) {
      SaveOptions options;
      options.data_step = end;
      engine_ckpt::save(*trainee, save_root, options);
    }
    auto* pipe = dynamic_cast<zero::Pipeline*>(trainee.get());
    mine.master = pipe != nullptr ? pipe->gather_master_params() : trainee->engine().gather_master_params();
    if (comm.rank() == 0) run = mine;
  });
  return run;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Both checkpoints' files hold the same records, byte for byte (the headers
// differ by the save's random id), and every file passes its whole-file CRC.
void expect_same_records(const std::string& a, const std::string& b, const std::string& what) {
  const InspectReport ra = inspect_checkpoint(a), rb = inspect_checkpoint(b);
  EXPECT_TRUE(ra.ok()) << what << ": " << (ra.files.empty() ? "" : ra.files[0].problem);
  EXPECT_TRUE(rb.ok()) << what;
  ASSERT_EQ(ra.manifest.ranks, rb.manifest.ranks) << what;
  EXPECT_EQ(ra.manifest.tensors, rb.manifest.tensors) << what;
  EXPECT_EQ(ra.manifest.unit_tensors(), rb.manifest.unit_tensors()) << what;
  for (size_t r = 0; r < ra.manifest.shards.size(); ++r) {
    const std::string fa = file_bytes(join_path(ra.path, ra.manifest.shards[r].file));
    const std::string fb = file_bytes(join_path(rb.path, rb.manifest.shards[r].file));
    ASSERT_EQ(fa.size(), fb.size()) << what << " file " << r;
    EXPECT_TRUE(fa.compare(kFileHeaderBytes, std::string::npos, fb, kFileHeaderBytes, std::string::npos) == 0)
        << what << ": the records of file " << r << " differ";
  }
}

TEST(PipelineCheckpoint, IsTheDataParallelCheckpoint) {
  for (auto optimizer : {optim::OptimizerKind::kAdamW, optim::OptimizerKind::kAdam8bit}) {
    const std::string what(optim::optimizer_kind_name(optimizer));
    TempDir pipe_dir, dp_dir;
    const Trained pipe =
        run({.stages = 2, .replicas = 2, .cuts = {3}, .accum = 4}, 0, 2, "", pipe_dir.path(), optimizer);
    const Trained dp = run({.replicas = 2, .accum = 4}, 0, 2, "", dp_dir.path(), optimizer);
    expect_same_bits(pipe, dp, what);
    expect_same_records(pipe_dir.path(), dp_dir.path(), what);
    const Manifest m = read_manifest(resolve_checkpoint(pipe_dir.path()));
    EXPECT_EQ(m.ranks, 2) << what;
    // 8-bit Adam's fp32 norms: the stages' tensor lists were agreed.
    EXPECT_EQ(m.per_unit_tensors(), optimizer == optim::OptimizerKind::kAdam8bit) << what;
  }
}

TEST(PipelineCheckpoint, ResumesInEveryLayout) {
  // 8 global micro-batches a step, 4 steps without a stop.
  const Trained straight = run({.replicas = 2, .accum = 4}, 0, 4, "", "");
  TempDir pipe_dir, dp_dir;
  const Trained pipe_half = run({.stages = 2, .replicas = 2, .cuts = {3}, .accum = 4}, 0, 2, "", pipe_dir.path());
  const Trained dp_half = run({.replicas = 2, .accum = 4}, 0, 2, "", dp_dir.path());
  const Trained rest{.losses = {straight.losses[2], straight.losses[3]}, .norms = {}, .master = straight.master};
  const std::vector<Layout> from_pipeline = {
      {.stages = 2, .replicas = 2, .cuts = {3}, .accum = 4},  // the same pipeline
      {.replicas = 4, .stage = Stage::k2, .accum = 2},        // data parallelism, another N and stage
      {.stages = 3, .replicas = 1, .cuts = {2, 4}, .stage = Stage::k0, .accum = 8},  // another pipeline
  };
  for (const Layout& l : from_pipeline)
    expect_same_bits(run(l, 2, 4, pipe_dir.path(), ""), rest, l.name() + " from P=2 D=2");
  const Layout onto{.stages = 4, .replicas = 1, .cuts = {1, 3, 5}, .accum = 8};
  expect_same_bits(run(onto, 2, 4, dp_dir.path(), ""), rest, onto.name() + " from DP N=2");
}

}  // namespace
}  // namespace zerodp::ckpt::testing
