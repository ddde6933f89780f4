// SPDX-License-Identifier: Apache-2.0
// Hybrid sharding (shard_group_size G) with compressed collectives: the
// gradient reduce-scatter inside a group sends int8 blocks, the shard's
// all-reduce across the N/G groups sends the plain dtype, and stage 3's
// gathers inside the group send int8 weights. Measured against the flat
// quantized run at the same N:
// - where every quantization block of the group's shards is a whole number
//   of the flat run's blocks (every unit's N-way shards a multiple of 256
//   elements), each contribution quantizes to the same codes and scales,
//   and a power-of-two G sums them in the flat run's tree: fp32 gives the
//   flat quantized bits;
// - elsewhere the blocks are cut elsewhere, so the rounding errors differ:
//   the loss stays as close to the flat quantized run's as that one stays
//   to the plain run's (engine_quantized_test.cc's 2%);
// - the bytes sent are the packed formula inside the group plus the plain
//   all-reduce of the shard across the groups.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "comm/quantize.h"
#include "comm/shard.h"
#include "engine_test_util.h"
#include "zero/engine.h"

namespace zerodp::zero::hybrid_quantized {
namespace {

using comm::Quantization;
using testing::RunResult;
using testing::same_run_bits;
using testing::train_mlp;

EngineConfig config_for(int stage, Dtype dtype, int group, bool quantized, int grad_accum = 1) {
  EngineConfig c = testing::hybrid_config(stage, dtype, group, grad_accum);
  if (quantized) {
    c.quantize_grads = Quantization::kInt8;
    c.quantize_weights = stage == 3 ? Quantization::kInt8 : Quantization::kNone;
  }
  return c;
}

// Units of 13 x 1024 and 1025 x 1024 elements: multiples of 4 x 256, so at
// N = 4 every shard (and every shard of a group of 2 or 1) starts a block. 1.06 M parameters; the labels
// (< 5) are valid classes of the 1024-way head.
model::MlpConfig block_aligned_mlp() {
  return model::MlpConfig{{testing::kInputs, 1024, 1024}, model::MlpHead::kClassification};
}

struct Layout {
  int ranks;
  int group;
};

// fp32, no clipping: the group's quantized reduce-scatter, then the plain
// all-reduce across the groups, is the flat quantized reduce-scatter's sum,
// bit for bit, with and without gradient accumulation; at stage 3 the int8
// weights each group gathers are the flat run's too. (N = 4, G = 2: two
// groups of two, the layout of one group per host on the two-host bed.)
TEST(HybridQuantized, BlockAlignedShardsGiveTheFlatQuantizedBits) {
  const model::MlpConfig mlp = block_aligned_mlp();
  // One layout: the 1M-parameter MLP is the cost (ASan: about 30 s each).
  for (const Layout l : {Layout{4, 2}}) {
    for (int stage = 1; stage <= 3; ++stage) {
      for (int accum : {1, 2}) {
        const std::string what = fmt::format("stage {} N={} G={} accumulation {}", stage, l.ranks, l.group, accum);
        const RunResult flat = train_mlp(l.ranks, config_for(stage, Dtype::fp32(), 0, true, accum), 3, 4, mlp);
        const RunResult hybrid = train_mlp(l.ranks, config_for(stage, Dtype::fp32(), l.group, true, accum), 3, 4, mlp);
        testing::expect_same_bits(flat, hybrid, what);
        if (accum > 1) continue;
        // Not vacuous: the plain hybrid run has other bits.
        const RunResult plain = train_mlp(l.ranks, config_for(stage, Dtype::fp32(), l.group, false, accum), 3, 4, mlp);
        EXPECT_FALSE(same_run_bits(plain, hybrid)) << what << ": quantizing changed nothing";
      }
    }
  }
}

// The small MLP's odd units (221, 162 and 50 elements): a group's shards
// and the flat run's are cut at other elements, so each contribution's
// blocks, scales and rounding errors differ. bf16 rounds the group's sum
// and the sum across groups separately too (engine_hybrid_test.cc). The
// yardstick is engine_quantized_test.cc's: the mean of the last 10 of 60
// losses within 2% of the flat quantized run's, and of the plain hybrid
// run's (measured: 0.12% from the flat quantized run and 0.04% from the
// plain hybrid one at stages 1-2; 0.8% and 0.13% at stage 3, whose weights
// are quantized in other blocks too).
TEST(HybridQuantized, OtherShardsStayCloseToTheFlatQuantizedRun) {
  for (int stage = 1; stage <= 3; ++stage) {
    EngineConfig c = config_for(stage, Dtype::bf16(), 0, true);
    c.lr_schedule.max_lr = 2e-2;
    const RunResult flat = train_mlp(4, c, 60, 8);
    c.shard_group_size = 2;
    const RunResult hybrid = train_mlp(4, c, 60, 8);
    c.quantize_grads = c.quantize_weights = Quantization::kNone;
    const RunResult plain = train_mlp(4, c, 60, 8);
    double a = 0, b = 0, p = 0, first = 0;
    for (size_t i = 0; i < 10; ++i) {
      a += flat.losses[flat.losses.size() - 1 - i];
      b += hybrid.losses[hybrid.losses.size() - 1 - i];
      p += plain.losses[plain.losses.size() - 1 - i];
      first += hybrid.losses[i];
    }
    const std::string what = fmt::format("stage {}", stage);
    EXPECT_FALSE(same_run_bits(plain, hybrid)) << what << ": the hybrid run gave the plain bits (not quantized?)";
    EXPECT_FALSE(same_run_bits(flat, hybrid)) << what << ": expected other blocks than the flat run's";
    EXPECT_LT(b, 0.6 * first) << what << ": the loss does not fall";
    EXPECT_NEAR(b / a, 1.0, 0.02) << what << ": last 10 losses " << b / 10 << " vs flat quantized " << a / 10;
    EXPECT_NEAR(b / p, 1.0, 0.02) << what << ": last 10 losses " << b / 10 << " vs plain hybrid " << p / 10;
  }
}

// Per step and rank r (position q = r % G in its group), bf16: inside the
// group, the reduce-scatter sends the packed part of every peer's shard of
// each unit, and stage 3 gathers each op's unit twice ((G-1) copies of the
// packed own shard), stages 1-2 all-gather each unit's shard once plain;
// across the R = N/G groups, the all-reduce of the own shard s of each unit
// sends (s - s_k) + (R-1) s_k bf16 elements (s_k: its R-way part k = r / G).
TEST(HybridQuantized, SentBytesArePackedInsideTheGroupAndPlainAcross) {
  const model::Mlp mlp(testing::small_mlp());
  for (const Layout l : {Layout{4, 2}, Layout{6, 3}, Layout{8, 2}}) {
    for (int stage = 1; stage <= 3; ++stage) {
      const RunResult run = train_mlp(l.ranks, config_for(stage, Dtype::bf16(), l.group, true), 2);
      const int groups = l.ranks / l.group;
      for (int r = 0; r < l.ranks; ++r) {
        const int q = r % l.group, k = r / l.group;
        uint64_t rs = 0, ag = 0, ar = 0;
        for (size_t u = 0; u < mlp.units().size(); ++u) {
          const auto& unit = mlp.units()[u];
          for (int peer = 0; peer < l.group; ++peer) {
            // docs/comm.md's packed bytes, int8 in blocks of 256 (engine_test_util.h).
            if (peer != q) rs += testing::packed_unit_shard(mlp, u, l.group, peer, comm::Quantization::kInt8, 256);
          }
          const uint64_t own = comm::shard_range(unit.count, l.group, q).count;
          const uint64_t part = comm::shard_range(own, groups, k).count;
          ar += 2 * ((own - part) + static_cast<uint64_t>(groups - 1) * part);
          if (stage != 3) ag += static_cast<uint64_t>(l.group - 1) * own * 2;
        }
        if (stage == 3) {
          for (size_t i = 0; i < mlp.ops().size(); ++i) {
            const auto u = static_cast<size_t>(mlp.ops()[i].unit);
            const auto gathers = static_cast<uint64_t>(testing::stage3_gathers(mlp, i));
            ag += gathers * static_cast<uint64_t>(l.group - 1) *
                  testing::packed_unit_shard(mlp, u, l.group, q, comm::Quantization::kInt8, 256);
          }
        }
        const auto& s = run.step_comm[r];
        const std::string what = fmt::format("N={} G={} stage {} rank {}", l.ranks, l.group, stage, r);
        EXPECT_EQ(s[comm::Collective::kReduceScatter].bytes_sent, rs) << what;
        EXPECT_EQ(s[comm::Collective::kAllGather].bytes_sent, ag) << what;
        EXPECT_EQ(s[comm::Collective::kAllReduce].bytes_sent, ar) << what;
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::zero::hybrid_quantized
