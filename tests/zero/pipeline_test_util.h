// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the pipeline tests (tests/zero, tests/ckpt): a small GPT
// whose cuts fall between four blocks, and a global batch that depends only
// on (step, global micro-batch), so every layout can feed the same tokens.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt.h"

namespace zerodp::zero::testing {

inline constexpr int kPipeSeq = 8, kPipeBatch = 2, kPipeVocab = 500;

// Four blocks: ops 0 embedding, 1-4 blocks, 5 ln_f, 6 head.
inline model::GptConfig small_pipeline_gpt() { return model::GptConfig{16, kPipeVocab, 512, 4, 2, 16}; }

// Global micro-batch g of step `step`: the same tokens whoever runs it.
inline void feed_global(model::Workspace& ws, int64_t step, int64_t g) {
  std::vector<int32_t> tokens(kPipeBatch * kPipeSeq), targets(kPipeBatch * kPipeSeq);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((step * 131 + g * 37 + static_cast<int64_t>(i) * 13 + g * g) % kPipeVocab);
    targets[i] = static_cast<int32_t>((tokens[i] * 7 + 3) % kPipeVocab);
  }
  ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
}

// What rank 0 saw of a run: each step's loss and gradient norm (empty where
// not recorded), and the whole model's master weights after the last step.
struct Trained {
  std::vector<double> losses, norms;
  std::vector<float> master;
};

inline void expect_same_bits(const Trained& a, const Trained& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  ASSERT_EQ(a.norms.size(), b.norms.size()) << what;
  for (size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(a.losses[i]), std::bit_cast<uint64_t>(b.losses[i]))
        << what << " step " << i << " loss " << a.losses[i] << " vs " << b.losses[i];
  }
  for (size_t i = 0; i < a.norms.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(a.norms[i]), std::bit_cast<uint64_t>(b.norms[i]))
        << what << " step " << i << " norm " << a.norms[i] << " vs " << b.norms[i];
  }
  ASSERT_EQ(a.master.size(), b.master.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < a.master.size(); ++i) differ += a.master[i] == b.master[i] ? 0 : 1;
  EXPECT_EQ(differ, 0u) << what << ": master weights that differ";
}

}  // namespace zerodp::zero::testing
