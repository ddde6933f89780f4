// SPDX-License-Identifier: Apache-2.0
#include "train/summary.h"

#include <gtest/gtest.h>

namespace zerodp::train {
namespace {

using zero::MemoryCategory;

// Stage s, N = 2, bf16 AdamW, 1000 parameters split 500/500, A micro-batches;
// rank 0 sent `sent_elements` bf16 elements by reduce-scatter + all-gather.
RunStats stats_for(int stage, int accum, uint64_t grads_bytes, uint64_t rs_elements, uint64_t ag_elements) {
  RunStats s;
  s.model_description = "test";
  s.num_params = 1000;
  s.engine.stage = parse_stage(stage, "test");
  s.ranks = 2;
  s.backend = "thread";
  s.engine.dtype = Dtype::bf16();
  s.engine.grad_accum = accum;
  for (int r = 0; r < 2; ++r) {
    RankMemory m;
    m.owned = 500;
    m.current[static_cast<size_t>(MemoryCategory::kParams)] = 2000;
    m.current[static_cast<size_t>(MemoryCategory::kGrads)] = grads_bytes;
    m.current[static_cast<size_t>(MemoryCategory::kMaster)] = 2000;
    m.current[static_cast<size_t>(MemoryCategory::kAdamM)] = 2000;
    m.current[static_cast<size_t>(MemoryCategory::kAdamV)] = 2000;
    m.model_states = 2000 + grads_bytes + 6000;
    s.memory.push_back(m);
  }
  comm::CommStats c;
  c[comm::Collective::kReduceScatter].bytes_sent = rs_elements * 2 / 2;  // (N-1)/N of 2 bytes each
  c[comm::Collective::kAllGather].bytes_sent = ag_elements * 2 / 2;
  s.step_comm = {c, c};
  return s;
}

TEST(Summary, StageOneAccumulatorIsExplainedNotADifference) {
  // Stage 1, A = 2: flat local gradients (2Φ bytes) + owned accumulator (2Φ/N).
  const std::string out = format_summary(stats_for(1, 2, 2000 + 1000, 2 * 1000, 1000));
  EXPECT_EQ(out.find("DIFFERS"), std::string::npos) << out;
  EXPECT_NE(out.find("= formula + accumulator"), std::string::npos) << out;
  const std::string plain = format_summary(stats_for(1, 1, 2000, 1000, 1000));
  EXPECT_NE(plain.find("= formula\n"), std::string::npos) << plain;
}

TEST(Summary, AccumulationTrafficIsSpelledOut) {
  // Stage 2, A = 4: four reduce-scatters of Φ and one all-gather: 5Φ.
  const RunStats s = stats_for(2, 4, 1000, 4 * 1000, 1000);
  EXPECT_DOUBLE_EQ(expected_sent_phi(s), 5.0);
  const std::string out = format_summary(s);
  EXPECT_NE(out.find("= 5.000Φ"), std::string::npos) << out;
  EXPECT_NE(out.find("4 reduce-scatters of Φ, one per micro-batch, + 1 all-gather of Φ = 5Φ"), std::string::npos)
      << out;
  EXPECT_EQ(format_summary(stats_for(2, 1, 1000, 1000, 1000)).find("--grad-accum"), std::string::npos);
}

// Hybrid sharding, N = 4 in 2 groups of G = 2, stage 2, bf16, A = 2, int8
// gradients, Φ = 1,000,000: per micro-batch rank 0 reduce-scatters inside
// its group (the peer's packed half: 4 bytes per 256 elements + 1 byte per
// element of Φ/2) and all-reduces its Φ/2 shard with the other group's
// rank 0 (2 (R-1)/R of Φ/2 bf16 elements, uncompressed); the step ends
// with one all-gather of Φ/2 bf16 elements inside the group.
TEST(Summary, HybridRunSaysWhatStaysInTheGroupAndWhatCrosses) {
  RunStats s = stats_for(2, 2, 1000, 0, 0);
  s.num_params = 1'000'000;
  s.ranks = 4;
  s.shard_group = 2;
  s.engine.quantize_grads = comm::Quantization::kInt8;
  for (RankMemory& m : s.memory) m.owned = 500'000;
  s.memory.resize(4, s.memory[0]);
  const uint64_t half = 500'000, packed_half = 4 * ((half + 255) / 256) + half;
  const uint64_t across = 2 * (half * 2);  // A all-reduces of the shard: 2 (R-1)/R = 1 of its bf16 bytes
  comm::CommStats c;
  c[comm::Collective::kReduceScatter].bytes_sent = 2 * packed_half;
  c[comm::Collective::kAllGather].bytes_sent = half * 2;
  c[comm::Collective::kAllReduce].bytes_sent = across;
  s.step_comm.assign(4, c);
  s.step_comm_across[comm::Collective::kAllReduce].bytes_sent = across;

  const std::string out = format_summary(s);
  EXPECT_NE(out.find("hybrid sharding: 2 groups of 2 ranks"), std::string::npos) << out;
  // Inside: 2 x 507,816 packed bytes + 1,000,000 = 2.02 MB, in bf16
  // elements' worth of Φ x (G-1)/G: 2,015,632 / (2 x 1,000,000 x 1/2).
  EXPECT_NE(out.find("inside its group of 2: 2.02 MB = 2.016Φ elements x (G-1)/G; the paper: 2Φ"), std::string::npos)
      << out;
  EXPECT_NE(out.find("across the 2 groups: 2.00 MB = 2.000 all-reduces of the Φ/G gradient shard"), std::string::npos)
      << out;
  // The lines a flat run prints, now for hybrid runs too.
  EXPECT_NE(out.find("with --grad-accum 2: 2 reduce-scatters of Φ, one per micro-batch, + 1 all-gather of Φ = 3Φ"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("across the groups: 2 all-reduces of the shard, one per micro-batch"), std::string::npos) << out;
  EXPECT_NE(out.find("compressed: parameter gathers none, gradient reduce-scatters int8"), std::string::npos) << out;
  EXPECT_NE(out.find("a 4-byte scale per 256 elements"), std::string::npos) << out;
  EXPECT_NE(out.find("the shard's all-reduce across the groups is not compressed: 2 bytes per element"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("--quantize-delay"), std::string::npos) << out;
  // A delay says which steps sent plain, and whether the measured one did.
  s.engine.quantize_delay = 5;
  s.steps_taken = 8;
  EXPECT_NE(format_summary(s).find("--quantize-delay 5: steps 1-5 sent the plain collectives\n"), std::string::npos);
  s.steps_taken = 5;
  EXPECT_NE(format_summary(s).find("--quantize-delay 5: every step sent the plain collectives (the run ended at step "
                                   "5), the one measured above too"),
            std::string::npos);
  s.engine.quantize_delay = 0;

  // Neither line without accumulation or compression.
  s.engine.grad_accum = 1;
  s.engine.quantize_grads = comm::Quantization::kNone;
  const std::string plain = format_summary(s);
  EXPECT_EQ(plain.find("--grad-accum"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("compressed"), std::string::npos) << plain;
  EXPECT_NE(plain.find("across the 2 groups"), std::string::npos) << plain;
}

}  // namespace
}  // namespace zerodp::train
