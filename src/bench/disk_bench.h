// SPDX-License-Identifier: Apache-2.0
// The disk benchmark behind `zerodp bench disk`: the sequential write and
// read bandwidth of a directory's disk as core/async_io.h drives it (the
// engine disk streaming will use), a file of `bytes` in blocks of `block`
// with `depth` requests in flight. O_DIRECT where the file system takes
// it, so the page cache neither absorbs the writes nor serves the reads;
// elsewhere (tmpfs, some overlay file systems) buffered: the write's time
// includes fdatasync, and the file's pages are dropped (posix_fadvise)
// before the read, which the result says. Wall-clock time: a disk's rate
// is not the CPU's. The file is removed afterwards, also on failure.
// Thread-safety: call from one thread.
#pragma once

#include <cstddef>
#include <string>

#include "core/async_io.h"

namespace zerodp::bench {

struct DiskBenchOptions {
  std::string dir;                        // an existing, writable directory
  size_t bytes = size_t{256} << 20;       // the file's size
  size_t block = size_t{1} << 20;         // one request's bytes (a multiple of 4096)
  int depth = 8;                          // requests in flight
  IoBackend backend = IoBackend::kUring;  // preferred (AsyncIo falls back)
};

struct DiskBenchResult {
  DiskBenchOptions options;
  IoBackend backend = IoBackend::kUring;  // the one that ran
  std::string fallback_reason = {};       // why not io_uring, when asked for
  bool direct = false;                    // O_DIRECT, or buffered
  double write_s = 0, read_s = 0;         // wall-clock seconds of each pass
  double write_bytes_per_s() const { return static_cast<double>(options.bytes) / write_s; }
  double read_bytes_per_s() const { return static_cast<double>(options.bytes) / read_s; }
};

// ConfigError for options out of range or a directory that is missing, not
// writable or short of free space for the file; IoError when the disk fails.
DiskBenchResult run_disk_bench(const DiskBenchOptions& options);

std::string format_disk_bench_text(const DiskBenchResult& r);
// {"dir", "bytes", "block", "depth", "backend", "direct", "write_GBps",
//  "read_GBps", "build"}: what plan --predict will read a disk rate from.
std::string format_disk_bench_json(const DiskBenchResult& r);

}  // namespace zerodp::bench
