// SPDX-License-Identifier: Apache-2.0
// The ZeRO engine's promises, measured on the small MLP with thread ranks:
// identical bits at every stage, the paper's model-state bytes and
// communication volume, learning, and agreement with a single rank.
#include "zero/engine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "core/convert.h"
#include "core/error.h"
#include "engine_test_util.h"
#include "optim/adafactor.h"
#include "optim/quant8.h"

namespace zerodp::zero {
namespace {

using testing::RunResult;
using testing::train_mlp;

EngineConfig config_for(int stage, Dtype dtype) {
  EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.optimizer.kind = optim::OptimizerKind::kAdamW;
  c.optimizer.adam.weight_decay = 0.01;
  c.lr_schedule.max_lr = 3e-3;
  c.loss_scaler.initial_scale = 1024.0;  // fp16: few early overflow skips
  return c;
}

using testing::expect_same_bits;

// Four steps over a fixed global batch of 8 micro-batches of 2 samples on n
// ranks (8 / n micro-batches each, config's grad_accum overridden): rank 0's
// losses and the final weights.
RunResult train_global_batch(const model::Mlp& mlp, EngineConfig c, int n) {
  constexpr int kMicroBatches = 8;
  constexpr int kSamples = 2;
  c.grad_accum = kMicroBatches / n;
  RunResult r;
  comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
    Engine engine(mlp, comm, c, /*seed=*/42, kSamples, 1);
    int64_t step = 0;
    const BatchFeeder feed = testing::global_batch_feeder(step, comm.rank(), comm.size(), kSamples);
    for (step = 0; step < 4; ++step) {
      const double loss = engine.train_step(feed).loss;
      if (comm.rank() == 0) r.losses.push_back(loss);
    }
    auto master = engine.gather_master_params();
    auto params = engine.gather_params();
    if (comm.rank() == 0) {
      r.master = std::move(master);
      r.params = std::move(params);
    }
  });
  return r;
}

class StageEquivalence : public ::testing::TestWithParam<std::tuple<Dtype::Kind, int>> {};

TEST_P(StageEquivalence, EveryStageGivesTheSameBits) {
  const Dtype dtype(std::get<0>(GetParam()));
  const int n = std::get<1>(GetParam());
  const RunResult reference = train_mlp(n, config_for(0, dtype), 20);
  for (int stage = 1; stage <= 3; ++stage) {
    const RunResult run = train_mlp(n, config_for(stage, dtype), 20);
    expect_same_bits(reference, run, fmt::format("stage {} vs 0, {} ranks, {}", stage, n, dtype.name()));
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndRanks, StageEquivalence,
                         ::testing::Combine(::testing::Values(Dtype::Kind::kFp32, Dtype::Kind::kBf16,
                                                              Dtype::Kind::kFp16),
                                            ::testing::Values(1, 2, 3, 4)),
                         [](const auto& info) {
                           return fmt::format("{}_N{}", Dtype(std::get<0>(info.param)).name(), std::get<1>(info.param));
                         });

// The other optimizers on the same promise: Lion (its sign update makes the
// parameters move by lr-sized steps, so a difference in one gradient bit
// that flips a sign shows at once) and SGD with momentum and weight decay.
EngineConfig optimizer_config(const std::string& optimizer, int stage, Dtype dtype) {
  EngineConfig c = config_for(stage, dtype);
  if (optimizer == "adam8bit") {
    // Every unit 8-bit (the MLP has no embedding; none is under min_8bit_size).
    c.optimizer.kind = optim::OptimizerKind::kAdam8bit;
    c.optimizer.adam.min_8bit_size = 0;
  } else if (optimizer == "adam8bit_mixed") {
    // The default: wide_mlp's units of 3900 and 205 elements keep fp32 moments.
    c.optimizer.kind = optim::OptimizerKind::kAdam8bit;
  } else if (optimizer == "adafactor") {
    c.optimizer.kind = optim::OptimizerKind::kAdafactor;  // HF's defaults: relative steps, no m
  } else if (optimizer == "adafactor_lr") {
    c.optimizer.kind = optim::OptimizerKind::kAdafactor;
    c.optimizer.adafactor = {.beta1 = 0.9, .weight_decay = 0.01, .scale_parameter = false, .relative_step = false};
    c.lr_schedule.max_lr = 1e-2;
  } else if (optimizer == "lion" || optimizer.starts_with("lion_bf16")) {
    c.optimizer.kind = optim::OptimizerKind::kLion;
    c.optimizer.lion = {.beta1 = 0.9,
                        .beta2 = 0.99,
                        .weight_decay = 0.1,
                        .bf16_momentum = optimizer != "lion",
                        .momentum_rounding = optimizer == "lion_bf16_sr" ? optim::RoundingMode::kStochastic
                                                                         : optim::RoundingMode::kNearest};
    c.lr_schedule.max_lr = 1e-3;
  } else {
    c.optimizer.kind = optim::OptimizerKind::kSgd;
    c.optimizer.sgd = {.momentum = 0.9, .weight_decay = 0.01, .nesterov = optimizer == "nesterov"};
    c.lr_schedule.max_lr = 0.05;
  }
  c.clip_norm = 1.0;
  return c;
}

class OptimizerStageEquivalence : public ::testing::TestWithParam<std::tuple<std::string, Dtype::Kind, int>> {};

TEST_P(OptimizerStageEquivalence, EveryStageGivesTheSameBits) {
  const std::string& optimizer = std::get<0>(GetParam());
  const Dtype dtype(std::get<1>(GetParam()));
  const int n = std::get<2>(GetParam());
  const RunResult reference = train_mlp(n, optimizer_config(optimizer, 0, dtype), 20);
  for (int stage = 1; stage <= 3; ++stage) {
    const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, dtype), 20);
    expect_same_bits(reference, run, fmt::format("{}: stage {} vs 0, {} ranks, {}", optimizer, stage, n, dtype.name()));
  }
  // The run trained: the weights moved from their initialisation.
  const RunResult none = train_mlp(n, optimizer_config(optimizer, 0, dtype), 0);
  EXPECT_NE(std::memcmp(none.master.data(), reference.master.data(), none.master.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptimizerStageEquivalence,
                         ::testing::Combine(::testing::Values("lion", "lion_bf16", "lion_bf16_sr", "sgd_momentum",
                                                              "nesterov", "adam8bit", "adafactor", "adafactor_lr"),
                                            ::testing::Values(Dtype::Kind::kFp32, Dtype::Kind::kBf16,
                                                              Dtype::Kind::kFp16),
                                            ::testing::Values(1, 2, 3, 4)),
                         [](const auto& info) {
                           return fmt::format("{}_{}_N{}", std::get<0>(info.param),
                                              Dtype(std::get<1>(info.param)).name(), std::get<2>(info.param));
                         });

// 8-bit Adam's blocks (2048 elements from each unit's start) are cut by the
// shards of every N here: units of 3900, 12040 and 205 elements. Blocks
// shared by several ranks get the maximum over all of them, so every stage
// gives stage 0's bits at each N, and with fp32 at a fixed global batch
// every power-of-two N gives the same bits.
model::MlpConfig wide_mlp() {
  return model::MlpConfig{{testing::kInputs, 300, 40, testing::kClasses}, model::MlpHead::kClassification};
}

TEST(Engine, Adam8bitSharedBlocksGiveTheSameBitsAtEveryStage) {
  for (const char* optimizer : {"adam8bit", "adam8bit_mixed"}) {
    for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
      for (int n : {2, 3, 5}) {
        const RunResult reference = train_mlp(n, optimizer_config(optimizer, 0, dtype), 8, 4, wide_mlp());
        for (int stage = 1; stage <= 3; ++stage) {
          const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, dtype), 8, 4, wide_mlp());
          expect_same_bits(reference, run,
                           fmt::format("{}: stage {} vs 0, {} ranks, {}", optimizer, stage, n, dtype.name()));
        }
      }
    }
  }
}

// The per-unit choice (optim::unit_optimizer_config) takes effect: the units
// under min_8bit_size get AdamW's fp32 moments, so the trajectory differs
// from every unit 8-bit, and the unit of 12040 elements stays 8-bit.
TEST(Engine, Adam8bitSmallUnitsKeepFp32Moments) {
  const RunResult all8 = train_mlp(2, optimizer_config("adam8bit", 3, Dtype::fp32()), 8, 4, wide_mlp());
  const RunResult mixed = train_mlp(2, optimizer_config("adam8bit_mixed", 3, Dtype::fp32()), 8, 4, wide_mlp());
  ASSERT_EQ(all8.master.size(), mixed.master.size());
  EXPECT_NE(std::memcmp(all8.master.data(), mixed.master.data(), all8.master.size() * sizeof(float)), 0);
  const optim::OptimizerConfig config = optimizer_config("adam8bit_mixed", 3, Dtype::fp32()).optimizer;
  EXPECT_EQ(optim::unit_optimizer_config(config, 3900, false).kind, optim::OptimizerKind::kAdamW);
  EXPECT_EQ(optim::unit_optimizer_config(config, 205, false).kind, optim::OptimizerKind::kAdamW);
  EXPECT_EQ(optim::unit_optimizer_config(config, 12040, false).kind, optim::OptimizerKind::kAdam8bit);
}

// Adafactor's per-tensor statistics over matrices that the shards of every
// N here cut (300 x 16, 40 x 300, 10 x 40 and their biases): summed over the
// plan's shards in rank order, so every stage gives stage 0's bits at each N.
TEST(Engine, AdafactorSplitMatricesGiveTheSameBitsAtEveryStage) {
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
    for (int n : {2, 3, 5}) {
      for (const char* optimizer : {"adafactor", "adafactor_lr"}) {
        const RunResult reference = train_mlp(n, optimizer_config(optimizer, 0, dtype), 6, 4, wide_mlp());
        for (int stage = 1; stage <= 3; ++stage) {
          const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, dtype), 6, 4, wide_mlp());
          expect_same_bits(reference, run,
                           fmt::format("{}: stage {} vs 0, {} ranks, {}", optimizer, stage, n, dtype.name()));
        }
      }
    }
  }
}

// The run has one learning rate, the schedule's: Adafactor without relative
// steps takes it, so a schedule without one is refused before any work.
TEST(Engine, AdafactorWithoutRelativeStepsNeedsTheSchedulesRate) {
  EngineConfig c = optimizer_config("adafactor_lr", 1, Dtype::fp32());
  EXPECT_NO_THROW(validate(c));
  c.lr_schedule.max_lr = 0.0;
  try {
    validate(c);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("max_lr > 0"), std::string::npos) << e.message();
  }
  c.optimizer.adafactor.relative_step = true;  // the rate is not read
  EXPECT_NO_THROW(validate(c));
}

// Adafactor's state: the full row and column statistics of each matrix a
// shard touches and v of its other elements (optim::adafactor_state_values),
// plus m with beta1; the ledger books them under adam_v and adam_m.
TEST(Engine, AdafactorModelStateBytes) {
  const model::Mlp mlp(wide_mlp());
  std::vector<size_t> counts;
  for (const auto& u : mlp.units()) counts.push_back(u.count);
  const std::vector<model::TensorInfo> tensors = mlp.tensors();
  for (const char* optimizer : {"adafactor", "adafactor_lr"}) {
    for (int n : {1, 3}) {
      for (int stage = 0; stage <= 3; ++stage) {
        const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, Dtype::bf16()), 1, 4, wide_mlp());
        const PartitionPlan plan(counts, n);
        for (int r = 0; r < n; ++r) {
          uint64_t held = 0, values = 0;
          for (size_t u = 0; u < plan.num_units(); ++u) {
            const comm::ShardRange s = stage == 0 ? comm::ShardRange{0, plan.unit_count(u)} : plan.shard(u, r);
            std::vector<optim::TensorShape> shapes;
            for (const auto& t : tensors) {
              if (t.offset >= plan.unit_offset(u) && t.offset < plan.unit_offset(u) + plan.unit_count(u)) {
                shapes.push_back(optim::tensor_shape(t.offset - plan.unit_offset(u), t.shape));
              }
            }
            held += s.count;
            values += optim::adafactor_state_values(shapes, s.offset, s.count);
          }
          const auto& ledger = run.ledgers[r];
          const std::string what = fmt::format("{} N={} stage {} rank {}", optimizer, n, stage, r);
          EXPECT_EQ(ledger[MemoryCategory::kMaster].current, 4 * held) << what;
          EXPECT_EQ(ledger[MemoryCategory::kAdamM].current, std::string(optimizer) == "adafactor_lr" ? 4 * held : 0)
              << what;
          // The statistics and each step's factors, a work buffer of their layout.
          EXPECT_EQ(ledger[MemoryCategory::kAdamV].current, 2 * 4 * values) << what;
          if (n == 1) {
            EXPECT_LT(2 * 4 * values, held) << what;  // under a byte per element, AdamW keeps 4
          }
        }
      }
    }
  }
}

TEST(Engine, Adam8bitEveryPowerOfTwoRankCountGivesTheSameBits) {
  const model::Mlp mlp(wide_mlp());
  for (const char* optimizer : {"adam8bit", "adam8bit_mixed"}) {
    std::optional<RunResult> first;
    for (int stage : {0, 1, 3}) {
      for (int n : {1, 2, 4, 8}) {
        EngineConfig c = optimizer_config(optimizer, stage, Dtype::fp32());
        c.clip_norm = 0.0;  // a clipped step's norm is summed over N's shards (engine.h)
        const RunResult r = train_global_batch(mlp, c, n);
        if (!first) {
          first = r;
        } else {
          expect_same_bits(*first, r, fmt::format("{}: stage {}, {} ranks", optimizer, stage, n));
        }
      }
    }
  }
}

// 8-bit Adam: one byte per element for each moment, plus an fp32 scale per
// 2048-element block each shard of a unit touches (a block cut by two
// shards is held by both); with the default min_8bit_size the units under
// 4096 elements hold AdamW's 4 bytes per element for each moment instead.
TEST(Engine, Adam8bitModelStateBytes) {
  const model::Mlp mlp(wide_mlp());
  for (const std::string optimizer : {"adam8bit", "adam8bit_mixed"}) {
    for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
      for (int n : {1, 3}) {
        for (int stage = 0; stage <= 3; ++stage) {
          const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, dtype), 1, 4, wide_mlp());
          const PartitionPlan plan(
              [&] {
                std::vector<size_t> counts;
                for (const auto& u : mlp.units()) counts.push_back(u.count);
                return counts;
              }(),
              n);
          for (int r = 0; r < n; ++r) {
            uint64_t held = 0, moment = 0;
            for (size_t u = 0; u < plan.num_units(); ++u) {
              const comm::ShardRange s = stage == 0 ? comm::ShardRange{0, plan.unit_count(u)} : plan.shard(u, r);
              held += s.count;
              const bool fp32 = optimizer == "adam8bit_mixed" && plan.unit_count(u) < 4096;
              moment += fp32 ? 4 * s.count : s.count + 4 * optim::quant8::blocks_touched(s.offset, s.count).count;
            }
            const auto& ledger = run.ledgers[r];
            const std::string what = fmt::format("{} {} N={} stage {} rank {}", optimizer, dtype.name(), n, stage, r);
            EXPECT_EQ(ledger[MemoryCategory::kMaster].current, dtype.is_low_precision() ? 4 * held : 0) << what;
            EXPECT_EQ(ledger[MemoryCategory::kAdamM].current, moment) << what;
            EXPECT_EQ(ledger[MemoryCategory::kAdamV].current, moment) << what;
          }
        }
      }
    }
  }
}

TEST(Engine, LionEverySimdLevelGivesTheBestLevelsBits) {
  for (Dtype::Kind kind : {Dtype::Kind::kFp32, Dtype::Kind::kBf16, Dtype::Kind::kFp16}) {
    const Dtype dtype(kind);
    for (int stage : {0, 3}) {
      const RunResult best = train_mlp(3, optimizer_config("lion", stage, dtype), 12);
      for (SimdLevel level : supported_simd_levels()) {
        ScopedSimdLevel forced(level);
        const RunResult run = train_mlp(3, optimizer_config("lion", stage, dtype), 12);
        expect_same_bits(best, run,
                         fmt::format("lion: {} vs {}, stage {}, {}", simd_level_name(level),
                                     simd_level_name(best_simd_level()), stage, dtype.name()));
      }
    }
  }
}

// Lion keeps one fp32 momentum: K = 8 with an fp32 master (fp16/bf16), 4 at
// fp32; at stage 0 on every rank, partitioned at stages 1-3. SGD with
// momentum the same.
TEST(Engine, LionAndSgdMomentumModelStateBytes) {
  for (const char* optimizer : {"lion", "sgd_momentum"}) {
    for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
      for (int n : {1, 3}) {
        for (int stage = 0; stage <= 3; ++stage) {
          const RunResult run = train_mlp(n, optimizer_config(optimizer, stage, dtype), 1);
          const uint64_t phi = run.num_params;
          for (int r = 0; r < n; ++r) {
            const uint64_t own = run.owned[r];
            const auto& ledger = run.ledgers[r];
            const uint64_t held = stage == 0 ? phi : own;
            const std::string what = fmt::format("{} {} N={} stage {} rank {}", optimizer, dtype.name(), n, stage, r);
            EXPECT_EQ(ledger[MemoryCategory::kMaster].current, dtype.is_low_precision() ? 4 * held : 0) << what;
            EXPECT_EQ(ledger[MemoryCategory::kAdamM].current, 4 * held) << what;
            EXPECT_EQ(ledger[MemoryCategory::kAdamV].current, 0u) << what;
            if (dtype.is_low_precision()) {
              const uint64_t expected_total = stage == 0   ? 12 * phi
                                              : stage == 1 ? 4 * phi + 8 * own
                                              : stage == 2 ? 2 * phi + 10 * own
                                                           : 12 * own;
              EXPECT_EQ(ledger.model_states.current, expected_total) << what;
            }
          }
        }
      }
    }
  }
}

// Every SIMD level (core/simd.h) gives the best level's bits: conversions,
// reductions and optimizer loops at every stage and dtype, on 3 ranks.
TEST(Engine, EverySimdLevelGivesTheBestLevelsBits) {
  for (Dtype::Kind kind : {Dtype::Kind::kFp32, Dtype::Kind::kBf16, Dtype::Kind::kFp16}) {
    const Dtype dtype(kind);
    for (int stage : {0, 3}) {
      const RunResult best = train_mlp(3, config_for(stage, dtype), 12);
      for (SimdLevel level : supported_simd_levels()) {
        ScopedSimdLevel forced(level);
        const RunResult run = train_mlp(3, config_for(stage, dtype), 12);
        expect_same_bits(best, run,
                         fmt::format("{} vs {}, stage {}, {}", simd_level_name(level),
                                     simd_level_name(best_simd_level()), stage, dtype.name()));
      }
    }
  }
}

TEST(Engine, AccumulationClippingAndNoOverlapKeepStagesEqual) {
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    EngineConfig base = config_for(0, dtype);
    base.grad_accum = 3;
    base.clip_norm = 0.5;
    const RunResult reference = train_mlp(3, base, 8);
    for (int stage = 1; stage <= 3; ++stage) {
      for (bool overlap : {true, false}) {
        EngineConfig c = base;
        c.stage = parse_stage(stage, "test");
        c.bucket_elements = overlap ? 100 : 1;  // stage 0: several units per bucket, or one each
        c.overlap = overlap;
        c.prefetch = overlap;
        expect_same_bits(reference, train_mlp(3, c, 8),
                         fmt::format("accum 3 + clip, stage {}, overlap {}, {}", stage, overlap, dtype.name()));
      }
    }
  }
}

// Model-state bytes per rank: the ZeRO paper's formulas with Φ/N replaced by
// the exact owned count (no padding): 16-bit AdamW has K = 12.
TEST(Engine, ModelStateBytesMatchThePaper) {
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
    for (int n : {1, 2, 3, 4}) {
      for (int stage = 0; stage <= 3; ++stage) {
        const RunResult run = train_mlp(n, config_for(stage, dtype), 1);
        const uint64_t phi = run.num_params;
        for (int r = 0; r < n; ++r) {
          const uint64_t own = run.owned[r];
          const auto& ledger = run.ledgers[r];
          const uint64_t p = dtype.size();  // bytes of a parameter / gradient
          uint64_t params = stage == 3 ? p * own : p * phi;
          uint64_t grads = stage >= 2 ? p * own : p * phi;
          uint64_t master = dtype.is_low_precision() ? 4 * (stage == 0 ? phi : own) : 0;
          uint64_t moments = 8 * (stage == 0 ? phi : own);
          const std::string what = fmt::format("{} N={} stage {} rank {}", dtype.name(), n, stage, r);
          EXPECT_EQ(ledger[MemoryCategory::kParams].current, params) << what;
          EXPECT_EQ(ledger[MemoryCategory::kGrads].current, grads) << what;
          EXPECT_EQ(ledger[MemoryCategory::kMaster].current, master) << what;
          EXPECT_EQ(ledger[MemoryCategory::kAdamM].current + ledger[MemoryCategory::kAdamV].current, moments) << what;
          if (dtype.is_low_precision()) {
            const uint64_t expected_total = stage == 0   ? 16 * phi
                                            : stage == 1 ? 4 * phi + 12 * own
                                            : stage == 2 ? 2 * phi + 14 * own
                                                         : 16 * own;
            EXPECT_EQ(ledger.model_states.current, expected_total) << what;
          }
        }
      }
    }
  }
}

// Bytes each rank sends per step: 2Φ elements at stages 0-2 and at stage 3
// the reduce-scatter's Φ plus its gathers, times (N-1)/N as every ring or
// all-to-all algorithm moves; exact here because every unit divides by N.
// The paper's stage 3 sends 3Φ: every unit gathered going forward and again
// going backward. The engine's backward keeps the last op's gather and
// gathers nothing for the first layer, which reads no weights
// (stage3_gathers), so a three-layer MLP sends 3Φ less the first and last
// layers.
TEST(Engine, CommunicationVolumeMatchesThePaper) {
  const model::MlpConfig even{{testing::kInputs, 32, 16, 8}, model::MlpHead::kClassification};  // 416, 528, 136
  const model::Mlp mlp(even);
  ASSERT_EQ(testing::stage3_gathered_elements(mlp), 416 + 528 + 136 + 528);
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
    for (int n : {2, 4}) {
      for (int stage = 0; stage <= 3; ++stage) {
        const RunResult run = train_mlp(n, config_for(stage, dtype), 2, 4, even);
        const double phi = static_cast<double>(run.num_params);
        ASSERT_EQ(phi, 416 + 528 + 136);
        const double elements = stage == 3 ? phi + testing::stage3_gathered_elements(mlp) : 2 * phi;
        const double expected = elements * (n - 1) / n * dtype.size();
        for (int r = 0; r < n; ++r) {
          const auto& s = run.step_comm[r];
          const uint64_t sent = s[comm::Collective::kAllReduce].bytes_sent +
                                s[comm::Collective::kReduceScatter].bytes_sent +
                                s[comm::Collective::kAllGather].bytes_sent;
          EXPECT_EQ(static_cast<double>(sent), expected)
              << dtype.name() << " N=" << n << " stage " << stage << " rank " << r;
        }
      }
    }
  }
}

TEST(Engine, LossFallsAtEveryStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    EngineConfig c = config_for(stage, Dtype::bf16());
    c.lr_schedule.max_lr = 2e-2;
    const RunResult run = train_mlp(2, c, 60, 8);
    double first = 0, last = 0;
    for (int i = 0; i < 10; ++i) first += run.losses[i], last += run.losses[run.losses.size() - 1 - i];
    EXPECT_LT(last, 0.6 * first) << "stage " << stage << ": mean loss of the first 10 steps " << first / 10
                                 << ", of the last 10 " << last / 10;
  }
}

TEST(Engine, LionLossFallsAtEveryStage) {
  // Lion's rate is about AdamW's (2e-2 above) / 3: the paper advises 3-10x less.
  for (int stage = 0; stage <= 3; ++stage) {
    EngineConfig c = optimizer_config("lion", stage, Dtype::bf16());
    c.lr_schedule.max_lr = 7e-3;
    const RunResult run = train_mlp(2, c, 60, 8);
    double first = 0, last = 0;
    for (int i = 0; i < 10; ++i) first += run.losses[i], last += run.losses[run.losses.size() - 1 - i];
    EXPECT_LT(last, 0.6 * first) << "stage " << stage << ": mean loss of the first 10 steps " << first / 10
                                 << ", of the last 10 " << last / 10;
  }
}

// N ranks with micro-batch b see the same global batch as one rank with
// micro-batch N*b; only the order of the sums differs, so the results agree
// to rounding (fp32).
// The global batch fixed at M = 8 micro-batches of 2 samples, global
// micro-batch j = m * N + r (train/sampler.h's assignment): 1, 2, 4 and 8
// ranks (8, 4, 2 and 1 micro-batches each) sum the same pairwise tree, so
// every stage gives the same bits at every such N (fp32, no clipping:
// zero/engine.h).
TEST(Engine, EveryPowerOfTwoRankCountGivesTheSameBitsAtAFixedGlobalBatch) {
  const model::Mlp mlp(testing::small_mlp());
  for (int stage = 0; stage <= 3; ++stage) {
    std::optional<RunResult> first;
    for (int n : {1, 2, 4, 8}) {
      const RunResult r = train_global_batch(mlp, config_for(stage, Dtype::fp32()), n);
      if (!first) {
        first = r;
      } else {
        expect_same_bits(*first, r, fmt::format("stage {}, {} ranks x {} micro-batches", stage, n, 8 / n));
      }
    }
  }
}

// The same with clipping on and binding at every step: the norm is summed
// in fixed blocks and added exactly (zero/grad_norm.h), so a clipped step is
// N-invariant too.
// Units of 1261 and 5194 elements: several blocks each, and at 8 ranks
// blocks that span three ranks' shards. The norm itself (a double: where
// the partial sums of N's shards rounded differently, its last bits moved
// with N) and the clipped weights are the same bits at every N and stage.
TEST(Engine, ClippedStepsAndTheirNormGiveTheSameBitsAtEveryPowerOfTwoRankCount) {
  const model::Mlp mlp(
      model::MlpConfig{{testing::kInputs, 97, 53, testing::kClasses}, model::MlpHead::kClassification});
  constexpr int kMicroBatches = 8, kSamples = 2;
  std::optional<std::vector<float>> first_master;
  std::optional<std::vector<double>> first_norms;
  for (int stage = 0; stage <= 3; ++stage) {
    EngineConfig c = config_for(stage, Dtype::fp32());
    c.clip_norm = 1e-3;  // far below the norm: every step clips
    for (int n : {1, 2, 4, 8}) {
      c.grad_accum = kMicroBatches / n;
      std::vector<double> norms;
      std::vector<float> master;
      comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
        Engine engine(mlp, comm, c, /*seed=*/42, kSamples, 1);
        int64_t step = 0;
        const BatchFeeder feed = testing::global_batch_feeder(step, comm.rank(), comm.size(), kSamples);
        std::vector<double> mine;
        for (step = 0; step < 4; ++step) {
          const StepResult r = engine.train_step(feed);
          EXPECT_TRUE(r.clipped);
          mine.push_back(r.grad_norm);
        }
        auto gathered = engine.gather_master_params();
        if (comm.rank() == 0) {
          norms = mine;
          master = std::move(gathered);
        }
      });
      const std::string where = fmt::format("stage {}, {} ranks", stage, n);
      if (!first_norms) {
        first_norms = norms;
        first_master = master;
        continue;
      }
      ASSERT_EQ(norms.size(), first_norms->size());
      EXPECT_EQ(std::memcmp(norms.data(), first_norms->data(), norms.size() * sizeof(double)), 0) << where;
      EXPECT_EQ(std::memcmp(master.data(), first_master->data(), master.size() * sizeof(float)), 0) << where;
    }
  }
}

TEST(Engine, RanksAgreeWithOneRankOverTheSameGlobalBatch) {
  const EngineConfig c = config_for(2, Dtype::fp32());
  const RunResult one = train_mlp(1, c, 10, 12);
  for (int n : {2, 3, 4}) {
    const RunResult many = train_mlp(n, c, 10, 12 / n);
    double worst = 0;
    for (size_t i = 0; i < one.master.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(one.master[i]) - many.master[i]));
    }
    EXPECT_LT(worst, 2e-5) << n << " ranks";
    for (size_t s = 0; s < one.losses.size(); ++s) EXPECT_NEAR(one.losses[s], many.losses[s], 1e-5) << s;
  }
}

}  // namespace
}  // namespace zerodp::zero

namespace zerodp::zero {
namespace {

// set_master_params: every rank holds exactly its stage's part of the given
// weights (the gathered master equals them bitwise), the compute parameters
// are their rounding, and training goes on from them identically at every
// stage.
TEST(Engine, SetMasterParamsStartsEveryStageFromTheGivenWeights) {
  const model::Mlp mlp(testing::small_mlp());
  std::vector<float> weights(mlp.num_params());
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.3f * std::sin(0.7f * static_cast<float>(i) + 0.1f);
  for (const Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    std::vector<float> widened(weights.size());
    if (dtype == Dtype::fp32()) {
      widened = weights;
    } else {
      std::vector<BFloat16> low(weights.size());
      convert(weights, low);
      convert(low, widened);
    }
    std::vector<double> first_losses;
    for (int stage = 0; stage <= 3; ++stage) {
      comm::run_thread_ranks(3, {}, [&](comm::Communicator& comm) {
        Engine engine(mlp, comm, config_for(stage, dtype), /*seed=*/99, /*micro_batch=*/2, 1);
        engine.set_master_params(weights);
        const std::vector<float> master = engine.gather_master_params();
        const std::vector<float> params = engine.gather_params();
        int64_t step = 0;
        const double loss = engine.train_step(testing::mlp_feeder(step, comm.rank(), 2)).loss;
        if (comm.rank() != 0) return;
        EXPECT_EQ(std::memcmp(master.data(), weights.data(), weights.size() * sizeof(float)), 0)
            << "stage " << stage << " " << dtype.name();
        EXPECT_EQ(std::memcmp(params.data(), widened.data(), widened.size() * sizeof(float)), 0)
            << "stage " << stage << " " << dtype.name();
        first_losses.push_back(loss);
      });
    }
    ASSERT_EQ(first_losses.size(), 4u);
    for (int stage = 1; stage <= 3; ++stage) EXPECT_EQ(first_losses[stage], first_losses[0]) << dtype.name();
  }
}

TEST(Engine, SetMasterParamsRefusesTheWrongCount) {
  const model::Mlp mlp(testing::small_mlp());
  comm::run_thread_ranks(1, {}, [&](comm::Communicator& comm) {
    Engine engine(mlp, comm, config_for(2, Dtype::fp32()), 99, 2, 1);
    const std::vector<float> short_weights(mlp.num_params() - 1, 0.0f);
    EXPECT_THROW(engine.set_master_params(short_weights), ShapeError);
  });
}

}  // namespace
}  // namespace zerodp::zero
