// SPDX-License-Identifier: Apache-2.0
// A pipeline stage that fails ends the job: rank 3 of a 2 x 2 pipeline (the
// last stage's second replica) throws or hangs at one of its collectives,
// at sites in its engine's reductions, the pipeline's messages and the
// step's norm, and every rank must end with a CommError within the bound;
// after a throw each names rank 3 as launched (a split group's messages give
// the world rank beside their own). After a hang the first rank to time out
// names whom it waited for, which may be a rank that was itself waiting on
// rank 3 (it began waiting earlier), so a hang's names are not checked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/fault_injection.h"
#include "comm/world.h"
#include "core/error.h"
#include "model/gpt.h"
#include "support/scoped_fault.h"
#include "zero/pipeline.h"

namespace zerodp::zero::pipeline_fault {
namespace {

using comm::FaultAction;
using comm::FaultSpec;
using std::chrono::steady_clock;

constexpr int kRanks = 4, kFaultyRank = 3, kSeq = 8, kBatch = 2;
constexpr auto kHangTimeout = std::chrono::milliseconds(2000);
constexpr auto kGenerousTimeout = std::chrono::milliseconds(60000);
constexpr auto kBound = std::chrono::seconds(10);  // a hang detector, not a performance threshold

struct Outcome {
  bool failed = false;
  std::vector<std::string> errors = std::vector<std::string>(kRanks);  // per rank: the CommError ("" = none)
  std::vector<bool> other_error = std::vector<bool>(kRanks, false);
  double seconds = 0;
};

Outcome run(std::chrono::milliseconds timeout) {
  const model::Gpt gpt(model::GptConfig{16, 50, 64, 4, 2, 16});
  EngineConfig config;
  config.stage = Stage::k1;
  config.grad_accum = 3;
  Outcome out;
  const auto start = steady_clock::now();
  try {
    comm::run_thread_ranks(kRanks, {.timeout = timeout}, [&](comm::Communicator& c) {
      try {
        Pipeline pipe(gpt, c, config, {2, PipelineSchedule::kOneFOneB, {3}}, /*seed=*/1, kBatch, kSeq);
        const BatchFeeder feed = [](model::Workspace& ws, int micro) {
          std::vector<int32_t> tokens(kBatch * kSeq), targets(kBatch * kSeq);
          for (size_t i = 0; i < tokens.size(); ++i) {
            tokens[i] = static_cast<int32_t>((i * 3 + static_cast<size_t>(micro)) % 50);
            targets[i] = static_cast<int32_t>((i * 7 + 1) % 50);
          }
          ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
        };
        for (int step = 0; step < 2; ++step) pipe.train_step(feed);
      } catch (const CommError& e) {
        out.errors[static_cast<size_t>(c.rank())] = e.message();
        throw;
      } catch (...) {
        out.other_error[static_cast<size_t>(c.rank())] = true;
        throw;
      }
    });
  } catch (...) {
    out.failed = true;
  }
  out.seconds = std::chrono::duration<double>(steady_clock::now() - start).count();
  return out;
}

TEST(PipelineFault, AFailedStageEndsEveryRank) {
  {
    zerodp::testing::ScopedFault none(std::nullopt);
    ASSERT_FALSE(run(kGenerousTimeout).failed) << "the fault-free run failed";
  }
  double worst = 0;
  for (FaultAction action : {FaultAction::kThrow, FaultAction::kHang}) {
    for (uint64_t k : {1, 2, 4, 7, 12, 20}) {
      if (action == FaultAction::kHang && k % 2 == 1) continue;  // each hang costs a timeout
      zerodp::testing::ScopedFault guard(
          FaultSpec{.rank = kFaultyRank, .collective = k, .save = 0, .point = {}, .action = action});
      const Outcome o = run(action == FaultAction::kHang ? kHangTimeout : kGenerousTimeout);
      worst = std::max(worst, o.seconds);
      SCOPED_TRACE(fmt::format("{} at collective {}", action == FaultAction::kThrow ? "throw" : "hang", k));
      EXPECT_TRUE(o.failed);
      EXPECT_LT(o.seconds, std::chrono::duration<double>(kBound).count());
      for (int r = 0; r < kRanks; ++r) {
        EXPECT_FALSE(o.other_error[static_cast<size_t>(r)]) << "rank " << r << " ended with a non-CommError";
        EXPECT_FALSE(o.errors[static_cast<size_t>(r)].empty()) << "rank " << r << " ended without an error";
        // A throw poisons every group: each rank's error names rank 3 as
        // launched ("rank 3", or "(world rank 3)" in a split group).
        if (action == FaultAction::kThrow) {
          EXPECT_NE(o.errors[static_cast<size_t>(r)].find("rank 3"), std::string::npos)
              << "rank " << r << ": " << o.errors[static_cast<size_t>(r)];
        }
        std::printf("  %s k=%llu rank %d: %s\n", action == FaultAction::kThrow ? "throw" : "hang",
                    static_cast<unsigned long long>(k), r, o.errors[static_cast<size_t>(r)].c_str());
      }
      if (action == FaultAction::kThrow) {
        EXPECT_NE(o.errors[kFaultyRank].find("injected failure"), std::string::npos) << o.errors[kFaultyRank];
      }
    }
  }
  std::printf("slowest faulty pipeline run %.3f s\n", worst);
}

}  // namespace
}  // namespace zerodp::zero::pipeline_fault
