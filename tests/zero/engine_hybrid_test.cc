// SPDX-License-Identifier: Apache-2.0
// Hybrid sharding (EngineConfig::shard_group_size, HSDP / MiCS): the model
// states are partitioned inside groups of G consecutive ranks and
// replicated across the N/G groups. Measured on the small MLP with thread
// ranks against the flat layout at the same N:
// - a power-of-two G sums every gradient in the flat run's pairwise tree
//   (comm/reduce.h), so fp32 runs without clipping give the flat bits;
// - another G adds in another tree: agreement to 1e-6 relative;
// - the ledger is the ZeRO formula with N replaced by G, and the bytes sent
//   are the in-group collectives plus the shard's all-reduce across groups;
// - bad sizes are ConfigErrors naming the flag.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "engine_test_util.h"
#include "zero/engine.h"

namespace zerodp::zero {
namespace {

using testing::hybrid_config;
using testing::RunResult;
using testing::train_mlp;

using testing::expect_same_bits;

// How far two runs are apart: the weights' relative L2 distance
// |a - b| / |a|, the largest relative difference of a step's loss, and
// whether some bit of the weights differs.
struct Agreement {
  double worst = 0.0;  // the larger of the two relative differences
  bool bits_differ = false;
};

Agreement compare(const RunResult& a, const RunResult& b) {
  Agreement out;
  EXPECT_EQ(a.master.size(), b.master.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.master.size() && i < b.master.size(); ++i) {
    const double x = a.master[i], y = b.master[i];
    diff += (x - y) * (x - y);
    norm += x * x;
    out.bits_differ = out.bits_differ || std::bit_cast<uint32_t>(a.master[i]) != std::bit_cast<uint32_t>(b.master[i]);
  }
  out.worst = std::sqrt(diff / norm);
  for (size_t i = 0; i < a.losses.size() && i < b.losses.size(); ++i) {
    out.worst = std::max(out.worst, std::fabs(a.losses[i] - b.losses[i]) / std::fabs(a.losses[i]));
  }
  return out;
}

struct Layout {
  int ranks;
  int group;
};

class HybridBits : public ::testing::TestWithParam<std::tuple<int, Layout>> {};

// fp32, no clipping, a power-of-two group: the flat run's bits, with and
// without gradient accumulation.
TEST_P(HybridBits, PowerOfTwoGroupGivesTheFlatBits) {
  const int stage = std::get<0>(GetParam());
  const Layout l = std::get<1>(GetParam());
  for (int accum : {1, 3}) {
    const RunResult flat = train_mlp(l.ranks, hybrid_config(stage, Dtype::fp32(), 0, accum), 12);
    const RunResult hybrid = train_mlp(l.ranks, hybrid_config(stage, Dtype::fp32(), l.group, accum), 12);
    expect_same_bits(flat, hybrid, fmt::format("stage {} N={} G={} accumulation {}", stage, l.ranks, l.group, accum));
  }
}

INSTANTIATE_TEST_SUITE_P(StagesAndLayouts, HybridBits,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values(Layout{4, 2}, Layout{4, 1}, Layout{8, 4}, Layout{8, 2},
                                                              Layout{6, 2}, Layout{2, 1})),
                         [](const auto& info) {
                           const Layout l = std::get<1>(info.param);
                           return fmt::format("stage{}_N{}_G{}", std::get<0>(info.param), l.ranks, l.group);
                         });

// G = 3 of N = 6: the flat sum is ((r0 + r1) + (r2 + r3)) + (r4 + r5), the
// hybrid one ((r0 + r1) + r2) + ((r3 + r4) + r5): another tree, so the
// gradients differ in their last bits, and so the weights after training.
TEST(HybridEngine, OtherGroupsAgreeToOneInAMillion) {
  for (int stage = 1; stage <= 3; ++stage) {
    const RunResult flat = train_mlp(6, hybrid_config(stage, Dtype::fp32(), 0), 12);
    const RunResult hybrid = train_mlp(6, hybrid_config(stage, Dtype::fp32(), 3), 12);
    const Agreement a = compare(flat, hybrid);
    EXPECT_TRUE(a.bits_differ) << "stage " << stage << ": expected another addition tree";
    EXPECT_LT(a.worst, 1e-6) << "stage " << stage;
  }
}

// Clipping reads the global norm, a sum of per-shard partials whose cut
// points depend on G: the norm may differ in its last fp64 bits, and so may
// the clipped step's fp32 coefficient. Agreement to 1e-6 relative (measured
// here: the same bits, the fp64 difference does not reach the fp32 coefficient).
TEST(HybridEngine, ClippedRunsAgreeToOneInAMillion) {
  for (int stage = 1; stage <= 3; ++stage) {
    EngineConfig flat_c = hybrid_config(stage, Dtype::fp32(), 0);
    flat_c.clip_norm = 0.05;  // below the gradient norm: every step clips
    EngineConfig hybrid_c = flat_c;
    hybrid_c.shard_group_size = 2;
    const RunResult flat = train_mlp(4, flat_c, 12);
    const RunResult hybrid = train_mlp(4, hybrid_c, 12);
    EXPECT_LT(compare(flat, hybrid).worst, 1e-6) << "stage " << stage;
  }
}

// bf16 gradients round to bf16 after the group's sum and again after the
// sum across groups (the flat run rounds once): some gradients are a bf16
// rounding (2^-8 relative) apart, so the runs agree to bf16's precision, not
// to fp32's (measured: 8e-5 relative after 12 steps).
TEST(HybridEngine, LowPrecisionRoundsTwiceAndStaysClose) {
  for (int stage = 1; stage <= 3; ++stage) {
    const RunResult flat = train_mlp(4, hybrid_config(stage, Dtype::bf16(), 0), 12);
    const RunResult hybrid = train_mlp(4, hybrid_config(stage, Dtype::bf16(), 2), 12);
    const Agreement a = compare(flat, hybrid);
    EXPECT_TRUE(a.bits_differ) << "stage " << stage << ": bf16 was expected to round twice";
    EXPECT_LT(a.worst, 1e-3) << "stage " << stage;
  }
}

// 8-bit Adam's block maxima are exact maxima over the group's shards, so a
// power-of-two group keeps the flat bits; Adafactor's tensor statistics are
// sums of per-shard partials cut by G: one in a million.
TEST(HybridEngine, BlockQuantizedAndFactoredOptimizers) {
  const model::MlpConfig wide{{testing::kInputs, 300, 40, testing::kClasses}, model::MlpHead::kClassification};
  for (int stage = 1; stage <= 3; ++stage) {
    EngineConfig c = hybrid_config(stage, Dtype::fp32(), 0);
    c.optimizer.kind = optim::OptimizerKind::kAdam8bit;
    EngineConfig h = c;
    h.shard_group_size = 2;
    expect_same_bits(train_mlp(4, c, 6, 4, wide), train_mlp(4, h, 6, 4, wide), fmt::format("adam8bit stage {}", stage));

    c.optimizer.kind = optim::OptimizerKind::kAdafactor;
    h.optimizer.kind = optim::OptimizerKind::kAdafactor;
    EXPECT_LT(compare(train_mlp(4, c, 6, 4, wide), train_mlp(4, h, 6, 4, wide)).worst, 1e-6)
        << "adafactor stage " << stage;
  }
}

// Per-rank model-state bytes: the ZeRO formula with N replaced by G (the
// owned count is the plan's over the group).
TEST(HybridEngine, ModelStateBytesFollowTheFormulaWithTheGroupSize) {
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
    for (const Layout l : {Layout{4, 2}, Layout{6, 3}, Layout{4, 1}}) {
      for (int stage = 1; stage <= 3; ++stage) {
        const RunResult run = train_mlp(l.ranks, hybrid_config(stage, dtype, l.group), 1);
        const RunResult group_alone = train_mlp(l.group, hybrid_config(stage, dtype, 0), 1);
        const uint64_t phi = run.num_params;
        for (int r = 0; r < l.ranks; ++r) {
          const std::string what =
              fmt::format("{} N={} G={} stage {} rank {}", dtype.name(), l.ranks, l.group, stage, r);
          const uint64_t own = run.owned[r];
          // The same shard as rank r % G of a flat run of G ranks.
          EXPECT_EQ(own, group_alone.owned[r % l.group]) << what;
          const auto& ledger = run.ledgers[r];
          const uint64_t p = dtype.size();
          EXPECT_EQ(ledger[MemoryCategory::kParams].current, stage == 3 ? p * own : p * phi) << what;
          EXPECT_EQ(ledger[MemoryCategory::kGrads].current, stage >= 2 ? p * own : p * phi) << what;
          EXPECT_EQ(ledger[MemoryCategory::kMaster].current, dtype.is_low_precision() ? 4 * own : 0) << what;
          EXPECT_EQ(ledger[MemoryCategory::kAdamM].current + ledger[MemoryCategory::kAdamV].current, 8 * own) << what;
          if (dtype.is_low_precision()) {
            const uint64_t expected = stage == 1 ? 4 * phi + 12 * own : stage == 2 ? 2 * phi + 14 * own : 16 * own;
            EXPECT_EQ(ledger.model_states.current, expected) << what;
          }
          // Everything the ledger holds is what the flat run of G ranks holds.
          EXPECT_EQ(ledger.model_states.peak, group_alone.ledgers[r % l.group].model_states.peak) << what;
        }
      }
    }
  }
}

// Bytes each rank sends per step with units that divide evenly: the
// group's collectives move (G-1)/G of 2 Φ (3 Φ at stage 3), and the shard's
// all-reduce across the R = N/G groups 2 (R-1)/R of Φ/G.
TEST(HybridEngine, CommunicationVolumeIsTheGroupsPlusTheShardsAllReduce) {
  const model::MlpConfig even{{testing::kInputs, 32, 16, 8}, model::MlpHead::kClassification};  // 416, 528, 136
  const model::Mlp mlp(even);
  for (Dtype dtype : {Dtype::bf16(), Dtype::fp32()}) {
    for (const Layout l : {Layout{4, 2}, Layout{8, 4}, Layout{8, 2}, Layout{4, 1}}) {
      for (int stage = 1; stage <= 3; ++stage) {
        const RunResult run = train_mlp(l.ranks, hybrid_config(stage, dtype, l.group), 2, 4, even);
        const double phi = static_cast<double>(run.num_params);
        const double g = l.group, groups = static_cast<double>(l.ranks) / l.group;
        // Stage 3's gathers: engine_test.cc's CommunicationVolumeMatchesThePaper.
        const double elements = stage == 3 ? phi + testing::stage3_gathered_elements(mlp) : 2 * phi;
        const double inside = elements * (g - 1) / g;
        const double across = 2 * (phi / g) * (groups - 1) / groups;
        for (int r = 0; r < l.ranks; ++r) {
          const auto& s = run.step_comm[r];
          const uint64_t sent = s[comm::Collective::kAllReduce].bytes_sent +
                                s[comm::Collective::kReduceScatter].bytes_sent +
                                s[comm::Collective::kAllGather].bytes_sent;
          EXPECT_EQ(static_cast<double>(sent), (inside + across) * dtype.size())
              << dtype.name() << " N=" << l.ranks << " G=" << l.group << " stage " << stage << " rank " << r;
        }
      }
    }
  }
}

TEST(HybridEngine, GroupSizeThatDoesNotDivideTheRanksIsRefused) {
  for (const auto& [ranks, group, stage] :
       {std::tuple{4, 3, 2}, std::tuple{6, 4, 1}, std::tuple{2, 5, 3}, std::tuple{4, 2, 0}, std::tuple{4, -1, 2}}) {
    try {
      train_mlp(ranks, hybrid_config(stage, Dtype::fp32(), group), 1);
      FAIL() << "N=" << ranks << " G=" << group << " stage " << stage << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--shard-group-size"), std::string::npos) << e.what();
    }
  }
  // G = N at stage 0 is the flat layout: accepted.
  EXPECT_NO_THROW(train_mlp(2, hybrid_config(0, Dtype::fp32(), 2), 1));
}

// Consolidated views gather inside the group: every rank sees the model.
TEST(HybridEngine, GatherParamsToARootOfAnyGroup) {
  const model::Mlp mlp(testing::small_mlp());
  comm::run_thread_ranks(4, {}, [&](comm::Communicator& c) {
    Engine engine(mlp, c, hybrid_config(3, Dtype::bf16(), 2), 42, 4, 1);
    const std::vector<float> all = engine.gather_params();
    for (int root : {0, 3}) {
      const LedgerBuffer<float> at_root = engine.gather_params_to(root);
      if (c.rank() == root) {
        ASSERT_EQ(at_root.size(), all.size());
        EXPECT_EQ(std::memcmp(at_root.data(), all.data(), all.size() * sizeof(float)), 0);
      } else {
        EXPECT_EQ(at_root.size(), 0u);
      }
    }
  });
}

}  // namespace
}  // namespace zerodp::zero
