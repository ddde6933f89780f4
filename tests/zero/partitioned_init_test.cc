// SPDX-License-Identifier: Apache-2.0
// Partitioned initialisation: no rank builds the whole model at start. This
// binary replaces the global operator new to see the largest single heap
// allocation any thread makes while the engines are built (the model states
// themselves are aligned_alloc'd LedgerBuffers and booked in the ledger).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/gpt.h"
#include "support/rank_harness.h"
#include "zero/engine.h"

// GCC (-O2) sees the replaced operator delete's free() inlined next to
// operator new and takes them for a mismatched pair; they are this file's
// own matching replacements.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<size_t> g_largest_new{0};

void note_allocation(size_t bytes) {
  size_t seen = g_largest_new.load(std::memory_order_relaxed);
  while (bytes > seen && !g_largest_new.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}
}  // namespace

void* operator new(size_t bytes) {
  note_allocation(bytes);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace zerodp::zero {
namespace {

TEST(PartitionedInit, NoRankMaterialisesTheModelAndEveryStageHoldsTheFullInitsBits) {
  // Φ ≈ 1.4M: a full fp32 copy would be 5.6 MB, a rank's quarter 1.4 MB.
  const model::Gpt gpt(model::GptConfig{64, 500, 512, 4, 4, 96});
  const size_t phi = gpt.num_params();
  std::vector<float> expected(phi);
  gpt.init_params(expected, 77);
  for (int stage = 0; stage <= 3; ++stage) {
    for (Dtype dtype : {Dtype::fp32(), Dtype::bf16()}) {
      std::vector<std::vector<float>> master(4);
      g_largest_new = 0;
      size_t largest_at_construction = 0;
      zerodp::testing::run_on_ranks(4, [&](comm::Communicator& comm) {
        EngineConfig c;
        c.stage = parse_stage(stage, "test");
        c.dtype = dtype;
        Engine engine(gpt, comm, c, 77, 1, 8);
        comm.barrier();
        if (comm.rank() == 0) largest_at_construction = g_largest_new.load();
        comm.barrier();
        EXPECT_EQ(engine.ledger().peak(MemoryCategory::kScratch),
                  4u * std::min<size_t>(1 << 16, engine.plan().largest_unit()));
        master[comm.rank()] = engine.gather_master_params();
      });
      EXPECT_LT(largest_at_construction, phi * 4 / 4) << "stage " << stage << " " << dtype.name();
      for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(std::memcmp(master[r].data(), expected.data(), phi * 4), 0)
            << "stage " << stage << " " << dtype.name() << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::zero
