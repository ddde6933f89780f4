// SPDX-License-Identifier: Apache-2.0
// zero::BufferPool: buffers come back by exact size, stay booked in the
// ledger while idle, are zeroed on request, may be given back from another
// thread, and trim() ends the idle ones' bookings.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "core/error.h"
#include "zero/buffer_pool.h"

namespace zerodp::zero {
namespace {

using C = MemoryCategory;

TEST(BufferPool, ReusesABufferOfTheSameSizeAndKeepsItBooked) {
  MemoryLedger ledger;
  BufferPool pool(ledger, C::kBuckets);
  std::byte* first = nullptr;
  {
    BufferPool::Handle a = pool.take(256, BufferPool::Fill::kUndefined);
    first = a->data();
    EXPECT_EQ(ledger.current(C::kBuckets), 256u);
  }
  EXPECT_EQ(pool.idle_bytes(), 256u);
  EXPECT_EQ(ledger.current(C::kBuckets), 256u) << "an idle buffer stays booked";
  const BufferPool::Handle b = pool.take(256, BufferPool::Fill::kUndefined);
  EXPECT_EQ(b->data(), first) << "the same size comes back";
  EXPECT_EQ(ledger.peak(C::kBuckets), 256u);
  const BufferPool::Handle c = pool.take(128, BufferPool::Fill::kUndefined);
  EXPECT_NE(c->data(), first) << "another size is another buffer";
  EXPECT_EQ(ledger.current(C::kBuckets), 384u);
}

TEST(BufferPool, ZeroFillClearsWhatTheLastUserLeft) {
  MemoryLedger ledger;
  BufferPool pool(ledger, C::kBuckets);
  {
    const BufferPool::Handle a = pool.take(64, BufferPool::Fill::kZero);
    std::memset(a->data(), 0x5a, 64);
  }
  const BufferPool::Handle b = pool.take(64, BufferPool::Fill::kZero);
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(std::to_integer<int>((*b)[i]), 0) << i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kBufferAlignment, 0u);
}

TEST(BufferPool, AnotherThreadGivesBackAndTrimEndsTheIdleBookings) {
  MemoryLedger ledger;
  BufferPool pool(ledger, C::kBuckets);
  BufferPool::Handle a = pool.take(512, BufferPool::Fill::kUndefined);
  const BufferPool::Handle kept = pool.take(64, BufferPool::Fill::kUndefined);
  std::thread([h = std::move(a)]() mutable { h.reset(); }).join();
  EXPECT_EQ(pool.idle_bytes(), 512u);
  pool.trim();
  EXPECT_EQ(pool.idle_bytes(), 0u);
  EXPECT_EQ(ledger.current(C::kBuckets), 64u) << "a buffer still out stays booked";
  EXPECT_THROW((void)pool.take(0, BufferPool::Fill::kZero), Error);
}

TEST(BufferPool, AHandleMayOutliveThePool) {
  MemoryLedger ledger;
  BufferPool::Handle a;
  {
    BufferPool pool(ledger, C::kBuckets);
    a = pool.take(32, BufferPool::Fill::kUndefined);
  }
  EXPECT_EQ(ledger.current(C::kBuckets), 32u);
  a.reset();
  EXPECT_EQ(ledger.current(C::kBuckets), 0u) << "the last handle frees it";
}

}  // namespace
}  // namespace zerodp::zero
