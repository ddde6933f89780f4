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
  s.stage = parse_stage(stage, "test");
  s.ranks = 2;
  s.backend = "thread";
  s.dtype = Dtype::bf16();
  s.grad_accum = accum;
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

}  // namespace
}  // namespace zerodp::train
