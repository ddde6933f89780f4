// SPDX-License-Identifier: Apache-2.0
// Resharding: a checkpoint saved at N ranks and stage s loads at M ranks and
// stage t with the same bits (compared by consolidating both), and training
// then matches a run that started at M from that state; the offline
// `reshard` gives the same.
#include <gtest/gtest.h>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt/manifest.h"
#include "ckpt/offline.h"
#include "ckpt_test_util.h"

namespace zerodp::ckpt::testing {
namespace {

constexpr int kK = 3;

FullState consolidate_all(const std::string& path) {
  const std::string dir = resolve_checkpoint(path);
  CheckpointReader reader(dir, read_manifest(dir));
  FullState s;
  const Manifest& m = reader.manifest();
  for (size_t t = 0; t < m.tensors.size(); ++t) s.tensors[m.tensors[t]] = read_full_tensor(reader, t);
  s.counters.steps = m.steps;
  s.counters.optimizer_steps = m.optimizer_steps;
  s.counters.scaler = m.scaler;
  return s;
}

struct Continued {
  FullState loaded;  // right after load
  FullState final;   // after kK more steps
  std::vector<double> losses;
};

// Loads `path` at m ranks and `config`, saves it again to `resave` (if not
// empty), and trains kK steps.
Continued continue_from(const std::string& path, int m, const zero::EngineConfig& config,
                        const std::string& resave = "") {
  const model::Mlp mlp(small_mlp());
  Continued out;
  std::mutex mu;
  zerodp::testing::run_on_ranks(m, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, config, kSeed + 1, kMicro, 1);
    load(engine, path);
    collect_state(engine, out.loaded, mu);
    if (!resave.empty()) save(engine, resave, {.seed = kSeed, .chunk_bytes = 12});
    std::vector<double> losses;
    train_steps(engine, kMicro, kK, losses);
    collect_state(engine, out.final, mu);
    if (comm.rank() == 0) out.losses = losses;
  });
  return out;
}

// The reference: a run at m ranks that starts from `state` with no file involved.
Continued start_from_state(const FullState& state, int m, const zero::EngineConfig& config) {
  const model::Mlp mlp(small_mlp());
  Continued out;
  std::mutex mu;
  zerodp::testing::run_on_ranks(m, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, config, kSeed + 2, kMicro, 1);
    fill_state(engine, state);
    std::vector<double> losses;
    train_steps(engine, kMicro, kK, losses);
    collect_state(engine, out.final, mu);
    if (comm.rank() == 0) out.losses = losses;
  });
  return out;
}

struct Reshard {
  int n, s, m, t;
  Dtype dtype = Dtype::fp32();
  // test_config's AdamW unless given (the optimizer of both runs).
  std::function<zero::EngineConfig(int stage, Dtype dtype)> config = [](int stage, Dtype dtype) {
    return test_config(stage, dtype);
  };
};

void expect_reshard(const Reshard& c) {
  SCOPED_TRACE(fmt::format("{} ranks stage {} -> {} ranks stage {} ({})", c.n, c.s, c.m, c.t, c.dtype.name()));
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  FullState saved;
  std::mutex mu;
  // Small chunks, so that reads start and end inside chunks.
  zerodp::testing::run_on_ranks(c.n, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, c.config(c.s, c.dtype), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, kK, losses);
    collect_state(engine, saved, mu);
    save(engine, dir / "a", {.seed = kSeed, .chunk_bytes = 20});
  });
  std::string why;
  const FullState a = consolidate_all(dir / "a");
  ASSERT_TRUE(same_state(a, saved, &why)) << "consolidating the N-rank checkpoint: " << why;

  const zero::EngineConfig target = c.config(c.t, c.dtype);
  const Continued direct = continue_from(dir / "a", c.m, target, dir / "b");
  EXPECT_TRUE(same_state(direct.loaded, saved, &why)) << "state right after loading at M: " << why;
  const FullState b = consolidate_all(dir / "b");
  EXPECT_TRUE(same_state(a, b, &why)) << "consolidated N-rank vs M-rank checkpoint: " << why;

  const Continued reference = start_from_state(a, c.m, target);
  EXPECT_EQ(direct.losses, reference.losses);
  EXPECT_TRUE(same_state(direct.final, reference.final, &why)) << "continued training vs a run started at M: " << why;

  reshard(dir / "a", dir / "offline", {.ranks = c.m, .stage = parse_stage(c.t, "test")});
  EXPECT_EQ(read_manifest(dir / "offline").ranks, c.m);
  const Continued offline = continue_from(dir / "offline", c.m, target);
  EXPECT_EQ(offline.losses, reference.losses);
  EXPECT_TRUE(same_state(offline.final, reference.final, &why)) << "offline reshard: " << why;
}

TEST(Reshard, FourToThreeStage3To0) { expect_reshard({4, 3, 3, 0}); }
TEST(Reshard, TwoToFourStage1To2) { expect_reshard({2, 1, 4, 2}); }
TEST(Reshard, ThreeToTwoStage0To3) { expect_reshard({3, 0, 2, 3}); }
TEST(Reshard, FourToOneStage2To1) { expect_reshard({4, 2, 1, 1}); }
TEST(Reshard, OneToThreeStage0To2Bf16) { expect_reshard({1, 0, 3, 2, Dtype::bf16()}); }
// Lion's exp_avg and SGD's momentum_buffer reshard like Adam's moments.
TEST(Reshard, LionThreeToTwoStage3To1Bf16) {
  expect_reshard({3, 3, 2, 1, Dtype::bf16(), [](int stage, Dtype dtype) { return lion_config(stage, dtype); }});
}
TEST(Reshard, LionOneToFourStage0To3) {
  expect_reshard({1, 0, 4, 3, Dtype::fp32(), [](int stage, Dtype dtype) { return lion_config(stage, dtype); }});
}
// 8-bit Adam's codes (per element) and block scales (per block, in the
// record of the shard holding the block's first element).
TEST(Reshard, Adam8bitThreeToTwoStage3To1Bf16) {
  expect_reshard({3, 3, 2, 1, Dtype::bf16(), [](int stage, Dtype dtype) { return adam8bit_config(stage, dtype); }});
}
TEST(Reshard, Adam8bitOneToFourStage0To3) {
  expect_reshard({1, 0, 4, 3, Dtype::fp32(), [](int stage, Dtype dtype) { return adam8bit_config(stage, dtype); }});
}
// With units in fp32 moments: each unit's own tensors, empty records for
// the others (format version 3).
TEST(Reshard, Adam8bitWithFp32UnitsThreeToTwoStage3To1Bf16) {
  expect_reshard(
      {3, 3, 2, 1, Dtype::bf16(), [](int stage, Dtype dtype) { return adam8bit_mixed_config(stage, dtype); }});
}
TEST(Reshard, Adam8bitWithFp32UnitsOneToFourStage0To3) {
  expect_reshard(
      {1, 0, 4, 3, Dtype::fp32(), [](int stage, Dtype dtype) { return adam8bit_mixed_config(stage, dtype); }});
}

// Adafactor's statistics: a matrix cut by the new shards is read whole by
// every rank that touches it, from the packed per-element tensor.
TEST(Reshard, AdafactorThreeToTwoStage3To1Bf16) {
  expect_reshard({3, 3, 2, 1, Dtype::bf16(), [](int stage, Dtype dtype) { return adafactor_config(stage, dtype); }});
}
TEST(Reshard, AdafactorOneToFourStage0To3WithM) {
  expect_reshard(
      {1, 0, 4, 3, Dtype::fp32(), [](int stage, Dtype dtype) { return adafactor_config(stage, dtype, true); }});
}
TEST(Reshard, AdafactorTwoToThreeStage2To2) {
  expect_reshard({2, 2, 3, 2, Dtype::fp32(), [](int stage, Dtype dtype) { return adafactor_config(stage, dtype); }});
}

TEST(Reshard, LionBf16MomentumThreeToTwoStage3To1) {
  expect_reshard({3, 3, 2, 1, Dtype::bf16(), [](int stage, Dtype dtype) {
                    zero::EngineConfig c = lion_config(stage, dtype);
                    c.optimizer.lion.bf16_momentum = true;
                    return c;
                  }});
}

TEST(Reshard, LionBf16StochasticRoundingTwoToThreeStage1To3) {
  expect_reshard({2, 1, 3, 3, Dtype::bf16(), [](int stage, Dtype dtype) {
                    zero::EngineConfig c = lion_config(stage, dtype);
                    c.optimizer.lion.bf16_momentum = true;
                    c.optimizer.lion.momentum_rounding = optim::RoundingMode::kStochastic;
                    return c;
                  }});
}

TEST(Reshard, SgdMomentumTwoToThreeStage2To0) {
  expect_reshard({2, 2, 3, 0, Dtype::fp32(), [](int stage, Dtype dtype) {
                    zero::EngineConfig c = test_config(stage, dtype);
                    c.optimizer.kind = optim::OptimizerKind::kSgd;
                    c.optimizer.sgd = {.momentum = 0.9, .weight_decay = 0.001};
                    return c;
                  }});
}

TEST(Reshard, MoreRanksThanUnitElements) {
  // 60 ranks: the 50-element unit leaves ranks with empty shards.
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  FullState saved;
  std::mutex mu;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(2), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 2, losses);
    collect_state(engine, saved, mu);
    save(engine, dir / "a", {.seed = kSeed});
  });
  reshard(dir / "a", dir / "wide", {.ranks = 60});
  reshard(dir / "wide", dir / "back", {.ranks = 3, .chunk_bytes = 8});
  std::string why;
  EXPECT_TRUE(same_state(consolidate_all(dir / "wide"), saved, &why)) << why;
  EXPECT_TRUE(same_state(consolidate_all(dir / "back"), saved, &why)) << why;
  const InspectReport report = inspect_checkpoint(dir / "wide");
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.files.size(), 60u);
}

TEST(Reshard, RefusesAnExistingOutput) {
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(1), kSeed, kMicro, 1);
    save(engine, dir / "a");
  });
  EXPECT_THROW(reshard(dir / "a", dir / "a", {.ranks = 3}), ConfigError);
  EXPECT_THROW(reshard(dir / "a", dir / "x", {.ranks = 0}), ConfigError);
}

}  // namespace
}  // namespace zerodp::ckpt::testing
