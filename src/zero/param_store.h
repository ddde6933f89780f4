// SPDX-License-Identifier: Apache-2.0
// ParamStore: a rank's stage-3 parameter shards on disk (--offload-params
// DIR), ZeRO-Infinity's parameter offload for a CPU engine. One scratch
// file per rank, unlinked as soon as it is open (a crash leaves nothing;
// the parameters are rounded from the master weights, which checkpoints
// keep), holding each unit's shard in the storage dtype at a direct-I/O
// aligned offset. One staging buffer of the largest shard sits in RAM:
// a gather reads its unit's shard into it just before the all-gather (on
// the comm thread, so the read of the next unit overlaps this one's
// compute, as the gather does), and the step writes each rounded shard
// from it.
//
// RAM: the staging buffer, booked as "offload" (core/offload_extents.h
// gives its size, for the plan too). Disk: the shards, each rounded up to
// kDirectAlignment.
// Thread-safety: one transfer at a time. The engine reads from its comm
// thread during the passes and writes from the rank's thread between them,
// with the comm thread drained; the two never overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/async_io.h"
#include "core/offload_extents.h"
#include "core/scratch_file.h"
#include "zero/memory_ledger.h"

namespace zerodp::zero {

class ParamStore {
 public:
  // `shard_bytes[u]`: this rank's shard of unit u. The file is reserved in
  // full now: a directory without the space is a ConfigError naming it.
  ParamStore(const std::string& dir, int rank, std::vector<size_t> shard_bytes, MemoryLedger& ledger);
  ~ParamStore();
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;

  // The staging buffer's first shard_bytes[u] bytes: where read() puts unit
  // u's shard and write() takes it from.
  std::span<std::byte> staging(size_t unit);
  void read(size_t unit);
  void write(size_t unit);

  uint64_t disk_bytes() const { return offload_disk_bytes(shard_bytes_); }

  struct Traffic {
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
    double read_seconds = 0.0;   // the gathers' reads (on the comm thread: hidden behind compute where they can)
    double write_seconds = 0.0;  // the steps' writes (the rank's thread waits for them)
  };
  const Traffic& traffic() const { return traffic_; }
  IoBackend backend() const { return io_.backend(); }
  bool direct() const { return file_.direct(); }

 private:
  void transfer(bool write, size_t unit);

  std::vector<size_t> shard_bytes_;
  std::vector<uint64_t> offsets_;  // each unit's shard in the file
  size_t chunk_ = 0;               // the largest request
  ScratchFile file_;
  LedgerBuffer<std::byte> staging_;  // the largest shard, and room to align it
  std::byte* aligned_ = nullptr;     // the staging buffer, kDirectAlignment-aligned
  AsyncIo io_;
  Traffic traffic_;
};

}  // namespace zerodp::zero
