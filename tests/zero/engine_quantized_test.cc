// SPDX-License-Identifier: Apache-2.0
// The engine with compressed collectives (--quantize-weights,
// --quantize-grads): the bytes each rank sends equal the packed-bytes
// formula written out in engine_test_util.h, the scratch is booked as "comm", the bits are
// the same at every SIMD level and run after run, and a short training
// run's loss stays close to the plain run's (it is not the same: only the
// plain collectives promise those bits).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "comm/quantize.h"
#include "comm/shard.h"
#include "core/error.h"
#include "core/simd.h"
#include "engine_test_util.h"
#include "optim/grad_utils.h"

namespace zerodp::zero {
namespace {

using comm::Quantization;
using testing::RunResult;
using testing::same_run_bits;
using testing::train_mlp;

EngineConfig quantized_config(int stage, Dtype dtype, Quantization weights, Quantization grads,
                              uint32_t block = comm::kDefaultQuantBlock) {
  EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.optimizer.kind = optim::OptimizerKind::kAdamW;
  c.lr_schedule.max_lr = 3e-3;
  c.loss_scaler.initial_scale = 1024.0;
  c.quantize_weights = weights;
  c.quantize_grads = grads;
  c.quantize_block = block;
  return c;
}

// Per step and rank: stage 3 gathers every op's unit in forward and in
// backward, (N-1) copies of the rank's packed shard each; the gradient
// reduce-scatter sends the rank's packed part of every peer's shard.
TEST(QuantizedEngine, SentBytesEqualThePackedFormula) {
  const model::Mlp mlp(testing::small_mlp());
  for (const auto& [q, block] : {std::pair{Quantization::kInt8, 256u}, std::pair{Quantization::kInt4, 256u},
                                 std::pair{Quantization::kInt8, 64u}}) {
    for (int n : {2, 3, 4}) {
      for (int stage = 1; stage <= 3; ++stage) {
        const Quantization weights = stage == 3 ? Quantization::kInt8 : Quantization::kNone;
        const RunResult run = train_mlp(n, quantized_config(stage, Dtype::bf16(), weights, q, block), 2);
        for (int r = 0; r < n; ++r) {
          uint64_t rs = 0, ag = 0;
          for (size_t u = 0; u < mlp.units().size(); ++u) {
            for (int k = 0; k < n; ++k) {
              if (k != r) rs += testing::packed_unit_shard(mlp, u, n, k, q, block);
            }
          }
          for (size_t i = 0; i < mlp.ops().size(); ++i) {
            const auto u = static_cast<size_t>(mlp.ops()[i].unit);
            // Stage 3: quantized gathers per op (stage3_gathers). Stages 1-2:
            // one plain all-gather of each unit's shard in the step (bf16, 2 bytes).
            const auto gathers = static_cast<uint64_t>(testing::stage3_gathers(mlp, i));
            if (stage == 3)
              ag += gathers * static_cast<uint64_t>(n - 1) *
                    testing::packed_unit_shard(mlp, u, n, r, Quantization::kInt8, block);
          }
          if (stage != 3) {
            for (const auto& unit : mlp.units()) {
              ag += static_cast<uint64_t>(n - 1) * comm::shard_range(unit.count, n, r).count * 2;
            }
          }
          const auto& s = run.step_comm[r];
          const std::string what =
              fmt::format("{}/{} N={} stage {} rank {}", comm::quantization_name(q), block, n, stage, r);
          EXPECT_EQ(s[comm::Collective::kReduceScatter].bytes_sent, rs) << what;
          EXPECT_EQ(s[comm::Collective::kAllGather].bytes_sent, ag) << what;
          EXPECT_EQ(s[comm::Collective::kAllReduce].bytes_sent, 0u) << what;
          // The scratch: booked as comm, the size comm::max_quantized_scratch gives,
          // beside the gradient norm's (optim::norm_scratch_floats).
          std::vector<uint64_t> counts;
          std::vector<std::vector<uint64_t>> starts;
          for (size_t u = 0; u < mlp.units().size(); ++u) {
            counts.push_back(mlp.units()[u].count);
            starts.push_back(testing::unit_tensor_starts(mlp, u));
          }
          EXPECT_EQ(run.ledgers[r][MemoryCategory::kComm].current,
                    comm::max_quantized_scratch(counts, n, r, {weights, block}, {q, block}, starts) +
                        optim::norm_scratch_floats(counts.size(), n) * sizeof(float))
              << what;
          EXPECT_GT(run.ledgers[r][MemoryCategory::kComm].current, 0u) << what;
        }
      }
    }
  }
}

TEST(QuantizedEngine, EverySimdLevelAndEveryRunGiveTheSameBits) {
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
    const EngineConfig c = quantized_config(3, dtype, Quantization::kInt8, Quantization::kInt8);
    const RunResult best = train_mlp(3, c, 8);
    EXPECT_TRUE(same_run_bits(best, train_mlp(3, c, 8))) << dtype.name() << ": a second run differs";
    for (SimdLevel level : supported_simd_levels()) {
      ScopedSimdLevel forced(level);
      EXPECT_TRUE(same_run_bits(best, train_mlp(3, c, 8))) << dtype.name() << " at " << simd_level_name(level);
    }
  }
}

TEST(QuantizedEngine, OverlapAndPrefetchDoNotChangeTheBits) {
  for (RoundingMode rounding : {RoundingMode::kNearest, RoundingMode::kStochastic}) {
    EngineConfig c = quantized_config(3, Dtype::bf16(), Quantization::kInt8, Quantization::kInt8);
    c.quantize_rounding = rounding;
    c.grad_accum = 2;
    const RunResult overlapped = train_mlp(3, c, 6);
    c.overlap = false;
    c.prefetch = false;
    EXPECT_TRUE(same_run_bits(overlapped, train_mlp(3, c, 6))) << rounding_mode_name(rounding);
  }
}

// Stochastic rounding (--quantize-rounding stochastic) draws from keys of
// the step, unit and micro-batch: a run repeats its bits at every SIMD
// level, and differs from the nearest-rounded run (weights and gradients
// each change the trajectory on their own).
TEST(QuantizedEngine, StochasticRoundingRepeatsAndDiffersFromNearest) {
  for (const auto& [weights, grads] :
       {std::pair{Quantization::kInt8, Quantization::kNone}, std::pair{Quantization::kNone, Quantization::kInt8}}) {
    EngineConfig c = quantized_config(3, Dtype::bf16(), weights, grads);
    const RunResult nearest = train_mlp(2, c, 6);
    c.quantize_rounding = RoundingMode::kStochastic;
    const RunResult stochastic = train_mlp(2, c, 6);
    const std::string what =
        fmt::format("weights {}, grads {}", comm::quantization_name(weights), comm::quantization_name(grads));
    EXPECT_FALSE(same_run_bits(nearest, stochastic)) << what;
    EXPECT_TRUE(same_run_bits(stochastic, train_mlp(2, c, 6))) << what << ": a second run differs";
    for (SimdLevel level : supported_simd_levels()) {
      ScopedSimdLevel forced(level);
      EXPECT_TRUE(same_run_bits(stochastic, train_mlp(2, c, 6))) << what << " at " << simd_level_name(level);
    }
  }
}

// --quantize-delay D: the first D steps are the plain run's, bits and
// bytes; from step D+1 on every collective is the quantized one (its
// bytes are the undelayed run's, and the trajectory leaves the plain one).
TEST(QuantizedEngine, DelayRunsPlainThenQuantizes) {
  constexpr int kDelay = 3;
  const EngineConfig plain = quantized_config(3, Dtype::bf16(), Quantization::kNone, Quantization::kNone);
  EngineConfig delayed = quantized_config(3, Dtype::bf16(), Quantization::kInt8, Quantization::kInt8);
  const RunResult undelayed = train_mlp(2, delayed, kDelay + 3);
  delayed.quantize_delay = kDelay;
  EXPECT_NO_THROW(validate(delayed));

  const RunResult plain_start = train_mlp(2, plain, kDelay);
  const RunResult delayed_start = train_mlp(2, delayed, kDelay);
  EXPECT_TRUE(same_run_bits(plain_start, delayed_start)) << "the first steps are not the plain run's";
  for (int r = 0; r < 2; ++r) {
    for (comm::Collective k : {comm::Collective::kReduceScatter, comm::Collective::kAllGather}) {
      EXPECT_EQ(delayed_start.step_comm[r][k].bytes_sent, plain_start.step_comm[r][k].bytes_sent) << r;
    }
  }

  const RunResult plain_run = train_mlp(2, plain, kDelay + 3);
  const RunResult run = train_mlp(2, delayed, kDelay + 3);
  for (size_t i = 0; i < kDelay; ++i) EXPECT_EQ(run.losses[i], plain_run.losses[i]) << "step " << i + 1;
  EXPECT_NE(run.losses[kDelay], plain_run.losses[kDelay]) << "step " << kDelay + 1 << " was not quantized";
  EXPECT_FALSE(same_run_bits(run, plain_run));
  EXPECT_FALSE(same_run_bits(run, undelayed));
  for (int r = 0; r < 2; ++r) {
    for (comm::Collective k : {comm::Collective::kReduceScatter, comm::Collective::kAllGather}) {
      EXPECT_EQ(run.step_comm[r][k].bytes_sent, undelayed.step_comm[r][k].bytes_sent) << r;
      EXPECT_LT(run.step_comm[r][k].bytes_sent, plain_run.step_comm[r][k].bytes_sent) << r;
    }
  }
  delayed.quantize_delay = -1;
  EXPECT_THROW(validate(delayed), ConfigError);
}

// Quantization changes the bits, so a test that compared them with the
// plain run's would fail; the loss stays close. The plain run's own
// spread is the yardstick: the MLP's mean loss over the last 10 of 60
// steps, quantized, within 2% (int8) of the plain one's.
TEST(QuantizedEngine, LossStaysCloseToThePlainRun) {
  for (int stage : {2, 3}) {
    EngineConfig plain = quantized_config(stage, Dtype::bf16(), Quantization::kNone, Quantization::kNone);
    plain.lr_schedule.max_lr = 2e-2;
    const RunResult reference = train_mlp(2, plain, 60, 8);
    for (Quantization grads : {Quantization::kInt8, Quantization::kInt4}) {
      EngineConfig c = plain;
      c.quantize_grads = grads;
      c.quantize_weights = stage == 3 ? Quantization::kInt8 : Quantization::kNone;
      const RunResult run = train_mlp(2, c, 60, 8);
      double a = 0, b = 0, first = 0;
      for (int i = 0; i < 10; ++i) {
        a += reference.losses[reference.losses.size() - 1 - i];
        b += run.losses[run.losses.size() - 1 - i];
        first += run.losses[static_cast<size_t>(i)];
      }
      const std::string what = fmt::format("stage {} grads {}", stage, comm::quantization_name(grads));
      EXPECT_FALSE(same_run_bits(reference, run)) << what << ": the quantized run gave the plain bits (not quantized?)";
      EXPECT_LT(b, 0.6 * first) << what << ": the loss does not fall";
      const double tolerance = grads == Quantization::kInt4 ? 0.10 : 0.02;
      EXPECT_NEAR(b / a, 1.0, tolerance) << what << ": mean of the last 10 losses " << b / 10 << " vs plain " << a / 10;
    }
  }
}

TEST(QuantizedEngine, RefusedWhereTheStageHasNoSuchCollective) {
  for (int stage : {0, 1, 2}) {
    EXPECT_THROW(validate(quantized_config(stage, Dtype::bf16(), Quantization::kInt8, Quantization::kNone)),
                 ConfigError)
        << stage;
  }
  EXPECT_THROW(validate(quantized_config(0, Dtype::bf16(), Quantization::kNone, Quantization::kInt8)), ConfigError);
  EXPECT_THROW(validate(quantized_config(3, Dtype::bf16(), Quantization::kInt4, Quantization::kNone)), ConfigError);
  EXPECT_NO_THROW(validate(quantized_config(1, Dtype::bf16(), Quantization::kNone, Quantization::kInt4)));
}

}  // namespace
}  // namespace zerodp::zero
