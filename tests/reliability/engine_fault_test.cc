// SPDX-License-Identifier: Apache-2.0
// Faults at every collective site of every ZeRO stage: rank 1 of 3 fails
// (throws, or hangs) at its k-th collective while the small MLP trains, and
// every other rank must end with a CommError that names rank 1.
//
// The bound: a throw ends the peers as soon as they next wait (the group is
// poisoned; the timeout plays no part, so those runs use a generous one that
// a loaded machine or a sanitizer never reaches); a hang ends them after the
// collective timeout T = 2 s (the first to wait times out, naming rank 1, and
// poisons the group for the rest). The whole faulty run must end within kBound = 10 s; that is
// a hang detector for the test (the stated bound), not a performance
// threshold: the measured times are printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "comm/fault_injection.h"
#include "comm/world.h"
#include "core/error.h"
#include "support/scoped_fault.h"
#include "zero/engine_test_util.h"

namespace zerodp::zero {
namespace {

using comm::FaultAction;
using comm::FaultSpec;
using std::chrono::steady_clock;

constexpr int kRanks = 3;
constexpr int kFaultyRank = 1;
constexpr int kSteps = 2;
constexpr auto kHangTimeout = std::chrono::milliseconds(2000);
constexpr auto kGenerousTimeout = std::chrono::milliseconds(60000);
constexpr auto kBound = std::chrono::seconds(10);

struct Outcome {
  bool failed = false;              // run_thread_ranks threw
  std::vector<std::string> errors;  // per rank: the CommError message ("" = none)
  std::vector<bool> other_error;    // per rank: a non-CommError exception
  std::vector<uint64_t> calls;      // per rank: collectives completed (fault-free run)
  double seconds = 0.0;
};

EngineConfig config_for(int stage, Dtype dtype) {
  EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.grad_accum = 2;        // the accumulation boundary is a collective site too
  c.bucket_elements = 64;  // stage 0: several buckets per backward
  return c;
}

// Builds the engine, trains kSteps steps and gathers the parameters, on
// kRanks thread ranks, recording what each rank ended with.
Outcome run(const EngineConfig& config, std::chrono::milliseconds timeout) {
  const model::Mlp mlp(testing::small_mlp());
  Outcome out;
  out.errors.resize(kRanks);
  out.other_error.resize(kRanks);
  out.calls.resize(kRanks);
  const auto start = steady_clock::now();
  try {
    comm::run_thread_ranks(kRanks, {.timeout = timeout}, [&](comm::Communicator& c) {
      try {
        Engine engine(mlp, c, config, /*seed=*/7, /*micro_batch=*/2, 1);
        int64_t step = 0;
        const BatchFeeder feed = testing::mlp_feeder(step, c.rank(), 2);
        for (step = 0; step < kSteps; ++step) engine.train_step(feed);
        (void)engine.gather_master_params();
        out.calls[c.rank()] = c.stats().total_calls();
      } catch (const CommError& e) {
        out.errors[c.rank()] = e.message();
        throw;
      } catch (...) {
        out.other_error[c.rank()] = true;
        throw;
      }
    });
  } catch (...) {
    out.failed = true;
  }
  out.seconds = std::chrono::duration<double>(steady_clock::now() - start).count();
  return out;
}

// The collective numbers to fault: every site for throw (cheap), the first,
// a middle and the last for hang (each costs one timeout).
std::vector<uint64_t> sites(uint64_t total, FaultAction action) {
  if (action == FaultAction::kThrow) {
    std::vector<uint64_t> all;
    for (uint64_t k = 1; k <= total; ++k) all.push_back(k);
    return all;
  }
  return {1, total / 2, total};
}

void check_faults(int stage, Dtype dtype, FaultAction action) {
  const EngineConfig config = config_for(stage, dtype);
  uint64_t total = 0;
  {
    zerodp::testing::ScopedFault none(std::nullopt);
    const Outcome clean = run(config, kGenerousTimeout);
    ASSERT_FALSE(clean.failed) << "the fault-free run failed";
    total = clean.calls[kFaultyRank];
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(clean.calls[r], total);
    ASSERT_GT(total, 4u);
  }
  double worst = 0.0;
  for (uint64_t k : sites(total, action)) {
    zerodp::testing::ScopedFault guard(
        FaultSpec{.rank = kFaultyRank, .collective = k, .save = 0, .point = {}, .action = action});
    const Outcome o = run(config, action == FaultAction::kHang ? kHangTimeout : kGenerousTimeout);
    worst = std::max(worst, o.seconds);
    SCOPED_TRACE(fmt::format("stage {} {} fault at collective {} of {}", stage, dtype.name(), k, total));
    EXPECT_TRUE(o.failed);
    EXPECT_LT(o.seconds, std::chrono::duration<double>(kBound).count());
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_FALSE(o.other_error[r]) << "rank " << r << " ended with a non-CommError";
      if (r == kFaultyRank) {
        EXPECT_NE(o.errors[r].find("[fault] rank 1"), std::string::npos) << o.errors[r];
        continue;
      }
      const std::string_view expected = action == FaultAction::kThrow ? "peer rank 1 failed" : "waiting for rank 1";
      EXPECT_NE(o.errors[r].find(expected), std::string::npos) << "rank " << r << ": " << o.errors[r];
    }
  }
  std::printf("stage %d %s %s: %llu collective sites, slowest faulty run %.3f s (timeout %.1f s)\n", stage,
              std::string(dtype.name()).c_str(), action == FaultAction::kThrow ? "throw" : "hang",
              static_cast<unsigned long long>(total), worst,
              action == FaultAction::kHang ? std::chrono::duration<double>(kHangTimeout).count() : 60.0);
}

class EngineFault : public ::testing::TestWithParam<int> {};

TEST_P(EngineFault, ThrowAtEveryCollectiveSite) { check_faults(GetParam(), Dtype::fp32(), FaultAction::kThrow); }
TEST_P(EngineFault, ThrowAtEveryCollectiveSiteFp16) { check_faults(GetParam(), Dtype::fp16(), FaultAction::kThrow); }
TEST_P(EngineFault, HangEndsPeersAfterTimeout) { check_faults(GetParam(), Dtype::bf16(), FaultAction::kHang); }

INSTANTIATE_TEST_SUITE_P(Stages, EngineFault, ::testing::Values(0, 1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace zerodp::zero
