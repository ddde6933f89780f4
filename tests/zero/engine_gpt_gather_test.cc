// SPDX-License-Identifier: Apache-2.0
// Stage 3 on a GPT (tied embedding and LM head): which gathers the engine
// makes, counted by the communicator, and that keeping a gather changes no
// bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "comm/world.h"
#include "model/gpt.h"
#include "zero/engine.h"

namespace zerodp::zero {
namespace {

constexpr int kSeq = 8;

// Units: the embedding 512 x 16 + 16 x 16 = 8448, two blocks of
// 12 x 16^2 + 13 x 16 = 3280, the final layernorm 32; all divide by 2 and 4.
model::GptConfig small_gpt() { return model::GptConfig{16, 500, 512, 2, 2, 16}; }

struct GptRun {
  std::vector<double> losses;       // rank 0's
  std::vector<uint64_t> step_sent;  // per rank: the last step's bytes sent
};

GptRun train_gpt(int n, bool prefetch, Dtype dtype) {
  const model::Gpt gpt(small_gpt());
  GptRun run;
  run.step_sent.resize(static_cast<size_t>(n));
  comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
    EngineConfig c;
    c.stage = Stage::k3;
    c.dtype = dtype;
    c.prefetch = prefetch;
    Engine engine(gpt, comm, c, /*seed=*/5, /*micro_batch=*/2, kSeq);
    int64_t step = 0;
    const BatchFeeder feed = [&](model::Workspace& ws, int) {
      std::vector<int32_t> tokens(2 * kSeq), targets(2 * kSeq);
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<int32_t>((step * 31 + comm.rank() * 7 + static_cast<int64_t>(i) * 13) % 500);
        targets[i] = static_cast<int32_t>((tokens[i] + 1) % 500);
      }
      ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
    };
    std::vector<double> losses;
    for (step = 0; step < 3; ++step) {
      const comm::CommStats before = comm.stats();
      losses.push_back(engine.train_step(feed).loss);
      const comm::CommStats s = comm.stats() - before;
      run.step_sent[static_cast<size_t>(comm.rank())] = s[comm::Collective::kReduceScatter].bytes_sent +
                                                        s[comm::Collective::kAllGather].bytes_sent +
                                                        s[comm::Collective::kAllReduce].bytes_sent;
    }
    if (comm.rank() == 0) run.losses = losses;
  });
  return run;
}

// With prefetch the region of two embeddings holds the embedding beside two
// blocks, so forward gathers it once for both its uses: a step sends
// 3Φ - |embedding| (forward Φ, backward Φ - |embedding|, the reduce-scatter
// Φ). Without prefetch the region is one embedding: forward gathers it again
// for the head, 3Φ. The same bits either way.
TEST(GptGathers, TheEmbeddingStaysForTheHeadWhereTheRegionHoldsIt) {
  const double phi = 8448 + 2 * 3280 + 32, embedding = 8448;
  ASSERT_EQ(model::Gpt(small_gpt()).num_params(), phi);
  for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
    for (int n : {2, 4}) {
      const GptRun kept = train_gpt(n, true, dtype);
      const GptRun serial = train_gpt(n, false, dtype);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(static_cast<double>(kept.step_sent[r]), (3 * phi - embedding) * (n - 1) / n * dtype.size())
            << dtype.name() << " N=" << n << " rank " << r;
        EXPECT_EQ(static_cast<double>(serial.step_sent[r]), 3 * phi * (n - 1) / n * dtype.size())
            << dtype.name() << " N=" << n << " rank " << r;
      }
      EXPECT_EQ(kept.losses, serial.losses) << dtype.name() << " N=" << n;
    }
  }
}

}  // namespace
}  // namespace zerodp::zero
