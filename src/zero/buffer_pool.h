// SPDX-License-Identifier: Apache-2.0
// BufferPool: the engine's per-step gradient buffers (a unit's fp32 gradient
// while its backward runs, stage 0's buckets, the low-precision copy a
// reduce-scatter sends), kept from one step to the next instead of freed and
// allocated again. A fresh large allocation costs its page faults and a
// memset of every byte each time (a measured 13-20% of a stage-0 step); a
// pooled one costs what the caller asks for: zeroing for a gradient, nothing
// for a bucket that is overwritten anyway.
//
// Buffers are matched by exact byte size. A step asks for the same sizes in
// the same order every time, so from the second step on nothing is
// allocated, and the pool holds, per size, the most buffers of that size
// that were out at once. The ledger books a pooled buffer under the pool's
// category for as long as the pool keeps it, out or idle;
// plan/engine_memory.cc predicts exactly that (per size, the most out at
// once, summed). trim() gives the idle ones back, e.g. before the end of a
// run's consolidated copy.
//
//   BufferPool pool(ledger, MemoryCategory::kBuckets);
//   BufferPool::Handle g = pool.take(bytes, BufferPool::Fill::kZero);
//   submit([g] { ... });   // the last owner's release gives it back
//
// Thread-safety: take(), trim() and a handle's release may run on any
// thread (the comm thread drops a reduction's input). The pool must outlive
// its handles' use of the ledger: the engine drains its comm thread first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "zero/memory_ledger.h"

namespace zerodp::zero {

class BufferPool {
 public:
  using Handle = std::shared_ptr<LedgerBuffer<std::byte>>;
  enum class Fill : uint8_t {
    kZero,       // every byte 0 (a gradient the backward accumulates into)
    kUndefined,  // whatever the last user left (the caller overwrites it)
  };

  BufferPool(MemoryLedger& ledger, MemoryCategory category);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of exactly `bytes` (> 0), 64-byte aligned: an idle one of that
  // size if there is one, otherwise a new one booked in the ledger.
  Handle take(size_t bytes, Fill fill);
  // Frees the idle buffers and ends their bookings; those out stay.
  void trim();
  // Bytes of the idle buffers (tests).
  uint64_t idle_bytes() const;

 private:
  struct Shelf {
    std::mutex mutex;
    std::map<size_t, std::vector<LedgerBuffer<std::byte>>> idle;  // by byte size
  };
  MemoryLedger& ledger_;
  MemoryCategory category_;
  // Shared with the handles' deleters, which put a buffer back on it.
  std::shared_ptr<Shelf> shelf_ = std::make_shared<Shelf>();
};

// A pooled buffer's bytes as `T` (the pool aligns every buffer to 64 bytes).
template <typename T>
T* pooled_data(const BufferPool::Handle& h) {
  return reinterpret_cast<T*>(h->data());  // NOLINT: aligned_alloc'd storage, used as T only
}

}  // namespace zerodp::zero
