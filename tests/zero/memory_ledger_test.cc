// SPDX-License-Identifier: Apache-2.0
// The memory ledger: per-category and total current/peak bytes, the RAII
// LedgerBuffer, optimizer state booking, JSON snapshot, and concurrent use
// from two threads (a rank's compute and comm threads).
#include "zero/memory_ledger.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "core/error.h"
#include "optim/optimizer.h"

namespace zerodp::zero {
namespace {

using C = MemoryCategory;

TEST(MemoryLedger, CountsCurrentAndPeakPerCategoryAndInTotal) {
  MemoryLedger ledger;
  ledger.allocate(C::kParams, 100);
  ledger.allocate(C::kActivations, 50);
  ledger.release(C::kActivations, 50);
  ledger.allocate(C::kGathered, 30);
  EXPECT_EQ(ledger.current(C::kParams), 100u);
  EXPECT_EQ(ledger.current(C::kActivations), 0u);
  EXPECT_EQ(ledger.peak(C::kActivations), 50u);
  EXPECT_EQ(ledger.current_total(), 130u);
  // The total's peak is the peak of the sum (150), not the sum of peaks (180).
  EXPECT_EQ(ledger.peak_total(), 150u);
  const LedgerSnapshot s = ledger.snapshot();
  EXPECT_EQ(s[C::kGathered], (ByteCounts{30, 30}));
  EXPECT_EQ(s.model_states, (ByteCounts{100, 100}));
  EXPECT_EQ(s.total, (ByteCounts{130, 150}));
}

TEST(MemoryLedger, OverReleaseThrowsAndChangesNothing) {
  MemoryLedger ledger;
  ledger.allocate(C::kGrads, 10);
  EXPECT_THROW(ledger.release(C::kGrads, 11), Error);
  EXPECT_THROW(ledger.release(C::kMaster, 1), Error);
  EXPECT_EQ(ledger.current(C::kGrads), 10u);
  EXPECT_EQ(ledger.current_total(), 10u);
}

TEST(MemoryLedger, ResetPeaksStartsANewMeasurement) {
  MemoryLedger ledger;
  ledger.allocate(C::kComm, 1000);
  ledger.release(C::kComm, 1000);
  ledger.allocate(C::kMaster, 8);
  ledger.reset_peaks();
  EXPECT_EQ(ledger.peak(C::kComm), 0u);
  EXPECT_EQ(ledger.peak_total(), 8u);
  EXPECT_EQ(ledger.snapshot().model_states.peak, 8u);
}

TEST(LedgerBuffer, BooksForItsLifetime) {
  MemoryLedger ledger;
  {
    LedgerBuffer<float> master(ledger, C::kMaster, 1001);
    EXPECT_EQ(master.size(), 1001u);
    EXPECT_EQ(ledger.current(C::kMaster), 4004u);  // element bytes, not the allocator's rounding
    EXPECT_EQ(reinterpret_cast<uintptr_t>(master.data()) % kBufferAlignment, 0u);
    for (float x : master) EXPECT_EQ(x, 0.0f);
    LedgerBuffer<Half> params(ledger, C::kParams, 1001);
    EXPECT_EQ(ledger.snapshot().model_states.current, 4004u + 2002u);
  }
  EXPECT_EQ(ledger.current_total(), 0u);
  EXPECT_EQ(ledger.peak_total(), 6006u);
}

TEST(LedgerBuffer, MoveTransfersTheBookingAndResetReleasesIt) {
  MemoryLedger ledger;
  LedgerBuffer<float> a(ledger, C::kBuckets, 10);
  LedgerBuffer<float> b = std::move(a);
  EXPECT_EQ(ledger.current(C::kBuckets), 40u);
  LedgerBuffer<float> c(ledger, C::kBuckets, 5);
  c = std::move(b);  // c's own 20 bytes are released first
  EXPECT_EQ(ledger.current(C::kBuckets), 40u);
  EXPECT_EQ(c.size(), 10u);
  c.reset();
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(ledger.current(C::kBuckets), 0u);
  LedgerBuffer<float> empty;  // books nothing
  EXPECT_EQ(ledger.current_total(), 0u);
}

TEST(MemoryLedger, BooksOptimizerStateUnderAdamCategories) {
  MemoryLedger ledger;
  {
    optim::ShardOptions options;
    options.accountant = optimizer_state_accountant(ledger);
    optim::OptimizerConfig adamw;
    adamw.kind = optim::OptimizerKind::kAdamW;
    auto opt = optim::make_optimizer(adamw, 333, options);
    EXPECT_EQ(ledger.current(C::kAdamM), 333u * 4);
    EXPECT_EQ(ledger.current(C::kAdamV), 333u * 4);

    optim::OptimizerConfig sgd;
    sgd.kind = optim::OptimizerKind::kSgd;
    sgd.sgd.momentum = 0.9;
    auto momentum = optim::make_optimizer(sgd, 100, options);
    EXPECT_EQ(ledger.current(C::kAdamM), 333u * 4 + 400u);
  }
  EXPECT_EQ(ledger.current_total(), 0u);
}

TEST(MemoryLedger, SnapshotAsJson) {
  MemoryLedger ledger;
  LedgerBuffer<float> m(ledger, C::kAdamM, 2);
  const nlohmann::json j = to_json(ledger.snapshot());
  EXPECT_EQ(j.at("adam_m").at("current").get<uint64_t>(), 8u);
  EXPECT_EQ(j.at("total").at("peak").get<uint64_t>(), 8u);
  EXPECT_EQ(j.at("model_states").at("current").get<uint64_t>(), 8u);
  for (const char* key : {"params", "grads", "master", "adam_m", "adam_v", "gathered", "buckets", "activations", "comm",
                          "model_states", "total"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(memory_category_name(C::kAdamV), "adam_v");
}

TEST(MemoryLedger, ComputeAndCommThreadsBookConcurrently) {
  // Each thread holds at most one buffer at a time; whatever the
  // interleaving, the books balance and the peak is bounded by what the two
  // threads can hold together.
  MemoryLedger ledger;
  constexpr int kIterations = 2000;
  auto worker = [&](MemoryCategory category, size_t count) {
    for (int i = 0; i < kIterations; ++i) {
      LedgerBuffer<float> buffer(ledger, category, count);
      buffer[0] = 1.0f;
    }
  };
  std::thread compute(worker, C::kActivations, 64);
  std::thread comm(worker, C::kComm, 32);
  compute.join();
  comm.join();
  const LedgerSnapshot s = ledger.snapshot();
  EXPECT_EQ(s.total.current, 0u);
  EXPECT_EQ(s[C::kActivations].peak, 256u);
  EXPECT_EQ(s[C::kComm].peak, 128u);
  EXPECT_GE(s.total.peak, 256u);
  EXPECT_LE(s.total.peak, 384u);
}

}  // namespace
}  // namespace zerodp::zero
