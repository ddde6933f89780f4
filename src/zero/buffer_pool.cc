// SPDX-License-Identifier: Apache-2.0
#include "zero/buffer_pool.h"

#include <cstring>

#include "core/error.h"

namespace zerodp::zero {

BufferPool::BufferPool(MemoryLedger& ledger, MemoryCategory category) : ledger_(ledger), category_(category) {}

BufferPool::~BufferPool() { trim(); }

BufferPool::Handle BufferPool::take(size_t bytes, Fill fill) {
  ZDP_CHECK(bytes > 0, Error, "[buffer pool] asked for an empty buffer");
  LedgerBuffer<std::byte> buffer;
  {
    const std::lock_guard lock(shelf_->mutex);
    auto it = shelf_->idle.find(bytes);
    if (it != shelf_->idle.end() && !it->second.empty()) {
      buffer = std::move(it->second.back());
      it->second.pop_back();
    }
  }
  if (buffer.empty()) {
    buffer = LedgerBuffer<std::byte>(ledger_, category_, bytes);  // new memory is zeroed already
  } else if (fill == Fill::kZero) {
    std::memset(buffer.data(), 0, bytes);
  }
  // The deleter puts the buffer back on the shelf, which it keeps alive.
  return {new LedgerBuffer<std::byte>(std::move(buffer)), [shelf = shelf_](LedgerBuffer<std::byte>* b) {
            {
              const std::lock_guard lock(shelf->mutex);
              shelf->idle[b->size()].push_back(std::move(*b));
            }
            delete b;  // NOLINT(cppcoreguidelines-owning-memory): the handle's own wrapper
          }};
}

void BufferPool::trim() {
  std::map<size_t, std::vector<LedgerBuffer<std::byte>>> freed;
  {
    const std::lock_guard lock(shelf_->mutex);
    freed.swap(shelf_->idle);
  }
}  // `freed` ends the bookings here, outside the lock

uint64_t BufferPool::idle_bytes() const {
  const std::lock_guard lock(shelf_->mutex);
  uint64_t bytes = 0;
  for (const auto& [size, buffers] : shelf_->idle) bytes += size * buffers.size();
  return bytes;
}

}  // namespace zerodp::zero
