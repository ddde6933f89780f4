// SPDX-License-Identifier: Apache-2.0
// Exact resume: training 2k steps straight gives the same bits as training
// k, saving, destroying the engine, loading into a new one and training k
// more — parameters, optimizer states, counters (fp16 loss scaler included)
// and every loss — at every stage and precision.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt_test_util.h"

namespace zerodp::ckpt::testing {
namespace {

struct Case {
  const char* name;
  int ranks;
  zero::EngineConfig config;
};

void expect_exact_resume(const Case& c, int k) {
  SCOPED_TRACE(c.name);
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  FullState straight, resumed;
  std::vector<double> straight_losses, first_half, second_half;
  FullState at_save;
  std::mutex mu;
  zerodp::testing::run_on_ranks(c.ranks, [&](comm::Communicator& comm) {
    {
      zero::Engine engine(mlp, comm, c.config, kSeed, kMicro, 1);
      std::vector<double> losses;
      int64_t data_step = 0;
      train_steps(engine, kMicro, 2 * k, losses, data_step);
      collect_state(engine, straight, mu);
      if (comm.rank() == 0) straight_losses = losses;
    }
    {
      zero::Engine engine(mlp, comm, c.config, kSeed, kMicro, 1);
      std::vector<double> losses;
      int64_t data_step = 0;
      train_steps(engine, kMicro, k, losses, data_step);
      collect_state(engine, at_save, mu);
      const SaveResult saved = save(engine, dir.path(), {.seed = kSeed, .data_step = data_step});
      EXPECT_EQ(saved.step, k);
      if (comm.rank() == 0) first_half = losses;
    }  // the engine is gone; only the files remain
    {
      zero::Engine engine(mlp, comm, c.config, /*seed=*/999, kMicro, 1);  // a different init: load must overwrite it
      const LoadResult loaded = load(engine, dir.path());
      EXPECT_EQ(loaded.step, k);
      EXPECT_EQ(loaded.seed, kSeed);
      EXPECT_EQ(engine.steps_taken(), at_save.counters.steps);
      std::vector<double> losses;
      int64_t data_step = loaded.step;
      train_steps(engine, kMicro, k, losses, data_step);
      collect_state(engine, resumed, mu);
      if (comm.rank() == 0) second_half = losses;
    }
  });
  ASSERT_EQ(straight_losses.size(), static_cast<size_t>(2 * k));
  std::vector<double> joined = first_half;
  joined.insert(joined.end(), second_half.begin(), second_half.end());
  EXPECT_EQ(joined, straight_losses);  // bitwise: doubles compared with ==
  std::string why;
  EXPECT_TRUE(same_state(straight, resumed, &why)) << why;
  // The test means something only if training moved the state.
  EXPECT_FALSE(bitwise_equal(at_save.tensors["master"], straight.tensors["master"]));
}

TEST(ExactResume, EveryStageFp32) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "fp32 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, test_config(stage)}, 3);
  }
}

TEST(ExactResume, Bf16Stage3) { expect_exact_resume({"bf16 stage 3", 2, test_config(3, Dtype::bf16())}, 3); }

// Hybrid sharding: group 0 saves the group's checkpoint, every group loads it.
TEST(ExactResume, HybridShardGroups) {
  for (int stage = 1; stage <= 3; ++stage) {
    for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
      zero::EngineConfig c = test_config(stage, dtype);
      c.shard_group_size = 2;
      const std::string name = fmt::format("hybrid N=4 G=2 {} stage {}", dtype.name(), stage);
      expect_exact_resume({name.c_str(), 4, c}, 3);
    }
  }
}

// Group 0's failed save fails every rank (no group waits for it), with the
// writer's error as the run's root cause.
TEST(ExactResume, HybridSaveFailureReachesEveryGroup) {
  TempDir dir;
  const std::string blocked = dir.path() + "/a-file";
  { std::ofstream(blocked) << "not a directory"; }
  zero::EngineConfig c = test_config(2);
  c.shard_group_size = 2;
  const model::Mlp mlp(small_mlp());
  std::atomic<int> failed{0};
  EXPECT_THROW(comm::run_thread_ranks(4, {},
                                      [&](comm::Communicator& comm) {
                                        zero::Engine engine(mlp, comm, c, kSeed, kMicro, 1);
                                        try {
                                          save(engine, blocked + "/ckpt");
                                        } catch (const Error&) {
                                          ++failed;
                                          throw;
                                        }
                                      }),
               IoError);
  EXPECT_EQ(failed.load(), 4);
}

// A save's collectives wait for the peers' file I/O: with hybrid sharding
// the other groups wait for group 0's whole save. Here group 0's writer
// takes 1.5 s at a point of its save while the run's collectives may wait
// 0.3 s: the save fails on the waiting ranks' timeout, unless the engine's
// timeout is raised around it (what the trainer does with
// --checkpoint-timeout), and the timeout is back after it.
TEST(ExactResume, HybridSaveWaitsForGroupZerosIo) {
  zero::EngineConfig c = test_config(2);
  c.shard_group_size = 2;
  const model::Mlp mlp(small_mlp());
  const comm::CommOptions quick{.timeout = std::chrono::milliseconds(300)};
  SaveOptions slow{.seed = kSeed};
  slow.on_point = [](SavePoint at, int rank) {
    if (at == SavePoint::kShardWritten && rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  };
  {
    TempDir dir;
    EXPECT_THROW(comm::run_thread_ranks(4, quick,
                                        [&](comm::Communicator& comm) {
                                          zero::Engine engine(mlp, comm, c, kSeed, kMicro, 1);
                                          save(engine, dir.path() + "/ckpt", slow);
                                        }),
                 comm::CommTimeoutError);
  }
  TempDir dir;
  comm::run_thread_ranks(4, quick, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, c, kSeed, kMicro, 1);
    {
      const zero::CommTimeoutAtLeast waits_for_io(engine, std::chrono::seconds(30));
      EXPECT_EQ(engine.comm_timeout(), std::chrono::seconds(30));
      EXPECT_EQ(engine.shard_communicator().options().timeout, std::chrono::seconds(30));
      save(engine, dir.path() + "/ckpt", slow);
    }
    EXPECT_EQ(engine.comm_timeout(), quick.timeout);
    EXPECT_EQ(engine.shard_communicator().options().timeout, quick.timeout);
    // "At least": a shorter wait than the run's leaves the run's.
    const zero::CommTimeoutAtLeast shorter(engine, std::chrono::milliseconds(10));
    EXPECT_EQ(engine.comm_timeout(), quick.timeout);
  });
  EXPECT_TRUE(is_complete_checkpoint(dir.path() + "/ckpt/" + step_dir_name(0)));
}

TEST(ExactResume, Bf16Stage0) { expect_exact_resume({"bf16 stage 0", 3, test_config(0, Dtype::bf16())}, 3); }

// fp16 with a scale that overflows at first, so that by the save the scaler
// has skipped steps, a non-initial scale and hysteresis, and its window is
// short enough to grow again after the resume.
zero::EngineConfig fp16_config(int stage) {
  zero::EngineConfig c = test_config(stage, Dtype::fp16());
  c.loss_scaler.initial_scale = 1 << 20;
  c.loss_scaler.window = 2;
  c.loss_scaler.hysteresis = 2;
  return c;
}

TEST(ExactResume, Fp16ScalerStateEveryStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "fp16 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 2, fp16_config(stage)}, 5);
  }
}

TEST(ExactResume, Fp16ScalerActuallyMoved) {
  // Guards the test above: the saved counters carry skipped steps.
  const model::Mlp mlp(small_mlp());
  zero::Engine::Counters counters;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, fp16_config(2), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 5, losses);
    if (comm.rank() == 0) counters = engine.counters();
  });
  EXPECT_GT(counters.scaler.total_overflows, 0);
  EXPECT_LT(counters.optimizer_steps, 5);  // skipped steps: the data position runs ahead of the optimizer
  EXPECT_GT(counters.optimizer_steps, 0);
  EXPECT_NE(counters.scaler.scale, double(1 << 20));
}

TEST(ExactResume, SgdMomentumWithAccumulation) {
  zero::EngineConfig c = test_config(1);
  c.optimizer.kind = optim::OptimizerKind::kSgd;
  c.optimizer.sgd = {.momentum = 0.9, .weight_decay = 0.001, .nesterov = true};
  c.grad_accum = 2;
  c.clip_norm = 0.5;
  expect_exact_resume({"sgd stage 1 accum 2", 3, c}, 3);
}

TEST(ExactResume, PlainSgdHasOnlyMaster) {
  zero::EngineConfig c = test_config(2);
  c.optimizer.kind = optim::OptimizerKind::kSgd;
  expect_exact_resume({"plain sgd stage 2", 2, c}, 2);
}

// Lion's one state tensor (exp_avg) and its schedule-driven decay resume
// bitwise at every stage and precision, fp16's skipped steps included.
TEST(ExactResume, LionEveryStageAndPrecision) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "lion fp32 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, lion_config(stage)}, 3);
  }
  expect_exact_resume({"lion bf16 stage 3", 2, lion_config(3, Dtype::bf16())}, 3);
  zero::EngineConfig fp16 = fp16_config(2);
  fp16.optimizer = lion_config(2).optimizer;
  fp16.lr_schedule.max_lr = 3e-3;
  expect_exact_resume({"lion fp16 stage 2", 2, fp16}, 5);
}

// 8-bit Adam's codes and block scales resume bitwise at every stage and
// precision, fp16's skipped steps included (format version 2).
TEST(ExactResume, Adam8bitEveryStageAndPrecision) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "adam8bit fp32 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, adam8bit_config(stage)}, 3);
  }
  expect_exact_resume({"adam8bit bf16 stage 3", 2, adam8bit_config(3, Dtype::bf16())}, 3);
  zero::EngineConfig fp16 = fp16_config(2);
  fp16.optimizer.kind = optim::OptimizerKind::kAdam8bit;
  expect_exact_resume({"adam8bit fp16 stage 2", 2, fp16}, 5);
}

// 8-bit Adam with units in fp32 moments: each unit's own tensors (format
// version 3, empty records for the ones it does not hold) resume bitwise.
TEST(ExactResume, Adam8bitWithFp32UnitsEveryStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "adam8bit mixed fp32 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, adam8bit_mixed_config(stage)}, 3);
  }
  expect_exact_resume({"adam8bit mixed bf16 stage 3", 2, adam8bit_mixed_config(3, Dtype::bf16())}, 3);
}

// A checkpoint whose units keep other 8-bit Adam state than this run's
// (saved with every unit 8-bit, as before zerodp kept any in fp32) is
// refused with the settings that resume it; with them it loads.
TEST(ExactResume, Adam8bitUnitsInOtherStateAreRefusedWithTheFlagsThatFit) {
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, adam8bit_config(3), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 2, losses);
    save(engine, dir / "a");
  });
  EXPECT_EQ(read_manifest(resolve_checkpoint(dir / "a")).format_version, 2u);
  auto try_load = [&](const zero::EngineConfig& config) {
    try {
      comm::run_thread_ranks(2, zerodp::testing::test_comm_options(), [&](comm::Communicator& comm) {
        zero::Engine engine(mlp, comm, config, kSeed, kMicro, 1);
        load(engine, dir / "a");
      });
    } catch (const ConfigError& e) {
      return e.message();
    } catch (const std::exception& e) {
      return std::string("wrong error type: ") + e.what();
    }
    return std::string();
  };
  const std::string message = try_load(adam8bit_mixed_config(3));
  EXPECT_NE(message.find("unit 1 (\"fc1\") was saved with 8-bit Adam state"), std::string::npos) << message;
  EXPECT_NE(message.find("--adam8bit-fp32-embedding true --adam8bit-min-8bit-size 0"), std::string::npos) << message;
  EXPECT_EQ(try_load(adam8bit_config(0)), "");
}

// Adafactor's factored statistics (packed per element in the checkpoint,
// each matrix's rows and columns at its start) resume bitwise at every stage
// and precision, with and without m, fp16's skipped steps included.
TEST(ExactResume, AdafactorEveryStageAndPrecision) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string name = "adafactor fp32 stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, adafactor_config(stage)}, 3);
  }
  expect_exact_resume({"adafactor with m bf16 stage 3", 2, adafactor_config(3, Dtype::bf16(), true)}, 3);
  expect_exact_resume({"adafactor with m fp32 stage 1", 3, adafactor_config(1, Dtype::fp32(), true)}, 3);
  zero::EngineConfig fp16 = fp16_config(2);
  fp16.optimizer.kind = optim::OptimizerKind::kAdafactor;
  expect_exact_resume({"adafactor fp16 stage 2", 2, fp16}, 5);
}

// Lion's bf16 momentum: saved widened to fp32 "exp_avg", narrowed back
// exactly on load.
TEST(ExactResume, LionBf16MomentumEveryStage) {
  for (int stage : {0, 3}) {
    zero::EngineConfig c = lion_config(stage, Dtype::bf16());
    c.optimizer.lion.bf16_momentum = true;
    const std::string name = "lion bf16 momentum stage " + std::to_string(stage);
    expect_exact_resume({name.c_str(), 3, c}, 3);
    // Stochastic rounding's bits come from the element and the step, which
    // the checkpoint keeps.
    c.optimizer.lion.momentum_rounding = optim::RoundingMode::kStochastic;
    const std::string sr = name + " stochastic rounding";
    expect_exact_resume({sr.c_str(), 3, c}, 3);
  }
}

TEST(ExactResume, SingleRank) { expect_exact_resume({"1 rank", 1, test_config(0)}, 2); }

}  // namespace
}  // namespace zerodp::ckpt::testing

namespace zerodp::ckpt::testing {
namespace {

TEST(Resume, AcrossPrecisions) {
  // fp16 -> bf16: the fp32 master weights and moments carry over exactly;
  // the scaler state is not carried into a run that has none.
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  FullState saved, loaded;
  std::mutex mu;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(2, Dtype::fp16()), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 3, losses);
    collect_state(engine, saved, mu);
    save(engine, dir.path());
  });
  zerodp::testing::run_on_ranks(3, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(1, Dtype::bf16()), kSeed, kMicro, 1);
    const LoadResult r = load(engine, dir.path());
    EXPECT_EQ(r.saved_dtype, "fp16");
    EXPECT_EQ(r.saved_ranks, 2);
    collect_state(engine, loaded, mu);
    EXPECT_EQ(engine.loss_scale(), 1.0);
  });
  for (const auto& [name, t] : saved.tensors) EXPECT_TRUE(bitwise_equal(t, loaded.tensors[name])) << name;
  EXPECT_EQ(loaded.counters.optimizer_steps, saved.counters.optimizer_steps);
}

}  // namespace
}  // namespace zerodp::ckpt::testing
