// SPDX-License-Identifier: Apache-2.0
// --offload-optimizer (zero/offload_store.h): the master weights and
// optimizer states on disk give exactly the bits of the same run with them
// in RAM, for every optimizer, stage and dtype; the ledger books the
// staging buffers instead of the states; checkpoint views read and write
// the disk's copy; nothing is left in the directory. --offload-params
// (zero/param_store.h) the same for stage 3's parameter shards.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine_test_util.h"
#include "support/scoped_env.h"
#include "support/scratch_dir.h"
#include "zero/engine.h"

namespace zerodp::zero::engine_offload {
namespace {

using zerodp::testing::ScopedEnv;
using zerodp::testing::ScratchDir;

EngineConfig offload_config(const std::string& optimizer, int stage, Dtype dtype) {
  EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.clip_norm = 1.0;
  c.lr_schedule.max_lr = 3e-3;
  c.loss_scaler.initial_scale = 1024.0;
  if (optimizer == "adamw") {
    c.optimizer.kind = optim::OptimizerKind::kAdamW;
    c.optimizer.adam.weight_decay = 0.01;
  } else if (optimizer == "adam8bit") {
    c.optimizer.kind = optim::OptimizerKind::kAdam8bit;
    c.optimizer.adam.min_8bit_size = 0;  // every unit 8-bit, blocks cut by the shards
  } else if (optimizer == "adafactor") {
    c.optimizer.kind = optim::OptimizerKind::kAdafactor;
    c.optimizer.adafactor = {.beta1 = 0.9, .weight_decay = 0.01, .scale_parameter = false, .relative_step = false};
  } else if (optimizer == "lion" || optimizer == "lion_bf16") {
    c.optimizer.kind = optim::OptimizerKind::kLion;
    c.optimizer.lion = {.beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1, .bf16_momentum = optimizer == "lion_bf16"};
    c.lr_schedule.max_lr = 1e-3;
  } else {
    c.optimizer.kind = optim::OptimizerKind::kSgd;
    c.optimizer.sgd = {.momentum = optimizer == "sgd" ? 0.0 : 0.9, .weight_decay = 0.01};
    c.lr_schedule.max_lr = 0.05;
  }
  return c;
}

// Units of 3900, 12040 and 205 elements: 8-bit Adam's blocks and
// Adafactor's matrices are cut by the shards.
model::MlpConfig wide_mlp() {
  return model::MlpConfig{{testing::kInputs, 300, 40, testing::kClasses}, model::MlpHead::kClassification};
}

class OffloadEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(OffloadEquivalence, EveryStageAndDtypeGivesTheInMemoryBits) {
  const std::string& optimizer = GetParam();
  const ScratchDir dir("offload_" + optimizer);
  for (const Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const std::string what = fmt::format("{} stage {} {}", optimizer, stage, dtype.name());
      EngineConfig c = offload_config(optimizer, stage, dtype);
      const testing::RunResult reference = testing::train_mlp(2, c, 6, 4, wide_mlp());
      c.offload_optimizer_dir = dir.path.string();
      const testing::RunResult offloaded = testing::train_mlp(2, c, 6, 4, wide_mlp());
      testing::expect_same_bits(reference, offloaded, what);
      // RAM holds the staging buffers, not the states.
      const LedgerSnapshot& ledger = offloaded.ledgers[0];
      EXPECT_EQ(ledger[MemoryCategory::kMaster].peak, 0u) << what;
      EXPECT_EQ(ledger[MemoryCategory::kAdamM].peak, 0u) << what;  // (Adafactor's per-step factors stay, as adam_v)
      EXPECT_GT(ledger[MemoryCategory::kOffload].peak, 0u) << what;
      EXPECT_EQ(ledger[MemoryCategory::kOffload].current, ledger[MemoryCategory::kOffload].peak) << what;
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path)) << "the offload file outlived the run";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OffloadEquivalence,
                         ::testing::Values("adamw", "sgd", "sgd_momentum", "lion", "lion_bf16", "adam8bit",
                                           "adafactor"));

// --offload-params (zero/param_store.h): stage 3's parameter shards on the
// disk, alone and with the optimizer's states there too, at bf16 and fp16,
// with and without overlap and prefetch, with int8 weight gathers, at 2
// and 3 ranks (uneven shards) and with hybrid sharding: the in-memory bits.
TEST(OffloadParams, EveryVariantGivesTheInMemoryBits) {
  const ScratchDir dir("offload_params");
  struct Variant {
    const char* name;
    int ranks = 2;
    Dtype dtype = Dtype::bf16();
    bool states = false;  // --offload-optimizer too
    void (*edit)(EngineConfig&) = nullptr;
  };
  const std::vector<Variant> variants = {
      {.name = "bf16"},
      {.name = "bf16 with the states", .states = true},
      {.name = "fp16 with the states", .dtype = Dtype::fp16(), .states = true},
      {.name = "3 ranks", .ranks = 3},
      {.name = "no overlap", .edit = [](EngineConfig& c) { c.overlap = false; }},
      {.name = "no prefetch", .edit = [](EngineConfig& c) { c.prefetch = false; }},
      {.name = "int8 gathers", .edit = [](EngineConfig& c) { c.quantize_weights = comm::Quantization::kInt8; }},
      {.name = "hybrid 2x2", .ranks = 4, .edit = [](EngineConfig& c) { c.shard_group_size = 2; }},
      {.name = "accumulation", .edit = [](EngineConfig& c) { c.grad_accum = 3; }},
  };
  for (const Variant& v : variants) {
    EngineConfig c = offload_config("adamw", 3, v.dtype);
    if (v.edit) v.edit(c);
    const testing::RunResult reference = testing::train_mlp(v.ranks, c, 6, 4, wide_mlp());
    c.offload_params_dir = dir.path.string();
    if (v.states) c.offload_optimizer_dir = dir.path.string();
    const testing::RunResult offloaded = testing::train_mlp(v.ranks, c, 6, 4, wide_mlp());
    testing::expect_same_bits(reference, offloaded, v.name);
    const LedgerSnapshot& ledger = offloaded.ledgers[0];
    EXPECT_EQ(ledger[MemoryCategory::kParams].peak, 0u) << v.name;
    EXPECT_GT(ledger[MemoryCategory::kOffload].peak, 0u) << v.name;
    EXPECT_EQ(ledger[MemoryCategory::kMaster].peak == 0, v.states) << v.name;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path)) << "the parameter file outlived the run";
}

TEST(OffloadParams, StagesOtherThanThreeAndFp32AreRefused) {
  const model::Mlp mlp(testing::small_mlp());
  const ScratchDir dir("offload_params_refused");
  struct Case {
    int stage;
    Dtype dtype;
    const char* expected;
  };
  for (const Case& k : {Case{2, Dtype::bf16(), "needs stage 3"}, Case{3, Dtype::fp32(), "needs --precision bf16"}}) {
    EngineConfig c = offload_config("adamw", k.stage, k.dtype);
    c.offload_params_dir = dir.path.string();
    comm::run_thread_ranks(1, {}, [&](comm::Communicator& comm) {
      try {
        Engine engine(mlp, comm, c, 42, 4, 1);
        ADD_FAILURE() << "no error at stage " << k.stage;
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(k.expected), std::string::npos) << e.what();
      }
    });
  }
}

TEST(Offload, ThreadBackendGivesTheSameBits) {
  const ScopedEnv io("ZERODP_IO", "threads");
  const ScratchDir dir("offload_threads");
  EngineConfig c = offload_config("adamw", 3, Dtype::bf16());
  const testing::RunResult reference = testing::train_mlp(2, c, 6, 4, wide_mlp());
  c.offload_optimizer_dir = dir.path.string();
  c.offload_params_dir = dir.path.string();
  testing::expect_same_bits(reference, testing::train_mlp(2, c, 6, 4, wide_mlp()), "threads backend");
}

// Every state tensor a checkpoint would save, copied out of the views.
struct SavedState {
  std::vector<std::vector<float>> data;
  std::vector<std::vector<uint8_t>> codes;
  Engine::Counters counters;
};
// As ckpt::save and load go: unit by unit, each between open and close.
template <typename Use>
void each_unit(Engine& engine, std::vector<Engine::StateView>& views, bool loading, const Use& use) {
  for (size_t i = 0; i < views.size();) {
    const size_t unit = views[i].unit;
    engine.open_unit_views(unit, loading);
    for (; i < views.size() && views[i].unit == unit; ++i) use(i, views[i]);
    engine.close_unit_views(unit, loading);
  }
}
SavedState save_views(Engine& engine) {
  SavedState s;
  std::vector<Engine::StateView> views = engine.state_views();
  s.data.resize(views.size());
  s.codes.resize(views.size());
  each_unit(engine, views, false, [&](size_t i, const Engine::StateView& v) {
    s.data[i].assign(v.data.begin(), v.data.end());
    s.codes[i].assign(v.codes.begin(), v.codes.end());
  });
  engine.release_state_views();
  s.counters = engine.counters();
  return s;
}
void load_views(Engine& engine, const SavedState& s) {
  std::vector<Engine::StateView> views = engine.state_views();
  ASSERT_EQ(views.size(), s.data.size());
  each_unit(engine, views, true, [&](size_t i, const Engine::StateView& v) {
    ASSERT_EQ(v.data.size(), s.data[i].size());
    std::copy(s.data[i].begin(), s.data[i].end(), v.data.begin());
    std::copy(s.codes[i].begin(), s.codes[i].end(), v.codes.begin());
  });
  engine.state_loaded(s.counters);
}

// A checkpoint's views of an offloaded run hold the in-memory run's values,
// and loading them into a fresh offloaded engine resumes with the same bits.
TEST(Offload, CheckpointViewsSaveAndResumeTheSameBits) {
  const ScratchDir dir("offload_views");
  // The last, at stage 3, with the parameters on the disk too: a load
  // rounds them from the loaded master weights into the parameter file.
  for (const char* optimizer : {"adamw", "adam8bit", "adafactor", "lion_bf16", "adamw params"}) {
    const bool params = std::string(optimizer) == "adamw params";
    const EngineConfig memory = offload_config(params ? "adamw" : optimizer, params ? 3 : 2, Dtype::bf16());
    EngineConfig offload = memory;
    offload.offload_optimizer_dir = dir.path.string();
    if (params) offload.offload_params_dir = dir.path.string();
    const model::Mlp mlp(wide_mlp());
    comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
      Engine a(mlp, comm, memory, 42, 4, 1), b(mlp, comm, offload, 42, 4, 1), resumed(mlp, comm, offload, 7, 4, 1);
      int64_t step = 0;
      const BatchFeeder feed = testing::mlp_feeder(step, comm.rank(), 4);
      for (; step < 3; ++step) {
        a.train_step(feed);
        b.train_step(feed);
      }
      const SavedState in_memory = save_views(a), offloaded = save_views(b);
      ASSERT_EQ(in_memory.data, offloaded.data) << optimizer;
      ASSERT_EQ(in_memory.codes, offloaded.codes) << optimizer;
      load_views(resumed, offloaded);
      for (; step < 6; ++step) {
        const double expected = a.train_step(feed).loss, got = resumed.train_step(feed).loss;
        // The bits, not the values: -0.0 against 0.0 or a NaN's payload would differ.
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        EXPECT_EQ(std::memcmp(&expected, &got, sizeof got), 0) << optimizer << " step " << step;
      }
      const std::vector<float> ma = a.gather_master_params(), mr = resumed.gather_master_params();
      EXPECT_EQ(ma, mr) << optimizer;
      EXPECT_EQ(a.gather_params(), resumed.gather_params()) << optimizer;
    });
  }
}

TEST(Offload, ADirectoryThatCannotHoldTheFileIsRefused) {
  EngineConfig c = offload_config("adamw", 1, Dtype::bf16());
  c.offload_optimizer_dir = "/nonexistent/offload";
  const model::Mlp mlp(testing::small_mlp());
  comm::run_thread_ranks(1, {}, [&](comm::Communicator& comm) {
    try {
      Engine engine(mlp, comm, c, 42, 4, 1);
      ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("/nonexistent/offload"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--offload-optimizer"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace zerodp::zero::engine_offload
