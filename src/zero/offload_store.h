// SPDX-License-Identifier: Apache-2.0
// OffloadStore: a rank's fp32 master weights and optimizer states on disk
// (--offload-optimizer DIR), the ZeRO-Infinity tier below RAM for a CPU
// engine. One scratch file per rank, unlinked as soon as it is open (a crash
// leaves nothing, and it is never the only copy of anything: checkpoints
// are), holding one extent per unit. A pass streams the extents in unit
// order through kSlots staging buffers: while the caller works on unit u in
// one, unit u + 1 is read into the next and unit u - 1 written back from
// the last, with asynchronous I/O (core/async_io.h), so the disk's time
// hides behind the optimizer's arithmetic where it can.
//
// RAM: kSlots buffers of the largest extent, booked in the ledger as
// "offload" (core/offload_extents.h gives the sizes, for the plan too). Disk: the extents,
// each rounded up to kDirectAlignment (disk_bytes).
// Thread-safety: one owner thread (the rank's); its I/O threads are its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/async_io.h"
#include "core/offload_extents.h"
#include "core/scratch_file.h"
#include "zero/memory_ledger.h"

namespace zerodp::zero {

class OffloadStore {
 public:
  static constexpr int kSlots = kOffloadSlots;
  // `unit_bytes[u]`: unit u's extent (its master and states). The file is
  // reserved in full now: a directory without the space is a ConfigError
  // naming it and the free space.
  OffloadStore(const std::string& dir, int rank, std::vector<size_t> unit_bytes, MemoryLedger& ledger);
  ~OffloadStore();
  OffloadStore(const OffloadStore&) = delete;
  OffloadStore& operator=(const OffloadStore&) = delete;

  enum class Pass : uint8_t {
    kRead,    // read each extent; nothing written
    kUpdate,  // read, changed by the visit, written back
    kFill,    // no read: the visit fills a zeroed buffer, written
  };
  // Calls visit(u, extent) for every unit in order; extent is unit_bytes[u]
  // long, 64-byte aligned, valid during the call only. An exception from a
  // visit or the I/O ends the pass after the requests in flight finished.
  using Visit = std::function<void(size_t unit, std::span<std::byte> extent)>;
  void stream(Pass pass, const Visit& visit);

  // One unit's extent at a time, through the first staging buffer, each
  // transfer waited for: a checkpoint's views, unit by unit. Not during a
  // pass. read_one returns the extent (unit_bytes[u] long); write_one writes
  // that buffer back to unit u's extent.
  std::span<std::byte> read_one(size_t unit);
  void write_one(size_t unit);
  // That buffer, where read_one puts every unit (its address never changes).
  std::span<std::byte> window() { return slot(0); }

  // The file's bytes on disk (core/offload_extents.h).
  uint64_t disk_bytes() const { return offload_disk_bytes(unit_bytes_); }

  // What the passes moved, and how long they waited for the disk.
  struct Traffic {
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
    double wait_seconds = 0.0;  // blocked on the disk
    double pass_seconds = 0.0;  // the passes from first request to last completion
  };
  const Traffic& traffic() const { return traffic_; }
  IoBackend backend() const { return io_.backend(); }
  bool direct() const { return file_.direct(); }

 private:
  using Tickets = std::vector<AsyncIo::Ticket>;
  std::span<std::byte> slot(size_t unit);
  // Queues the extent of `unit` in pieces, each at most chunk_ bytes,
  // between the file and `buffer` (a staging slot).
  Tickets transfer(bool write, size_t unit, std::span<std::byte> buffer);
  void wait(Tickets& tickets);

  std::vector<size_t> unit_bytes_;
  std::vector<uint64_t> offsets_;  // each unit's extent in the file
  size_t slot_bytes_ = 0;          // the largest extent, rounded up
  size_t chunk_ = 0;               // the largest request
  ScratchFile file_;
  LedgerBuffer<std::byte> staging_;  // kSlots slots, and room to align them
  std::byte* slots_ = nullptr;       // the first slot, kDirectAlignment-aligned
  AsyncIo io_;
  Traffic traffic_;
};

}  // namespace zerodp::zero
