// SPDX-License-Identifier: Apache-2.0
#include "bench/disk_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/build_info.h"
#include "core/error.h"
#include "core/scratch_file.h"

namespace zerodp::bench {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc): aligned_alloc's pair
};

void check_options(const DiskBenchOptions& o) {
  ZDP_CHECK(o.block >= kDirectAlignment && o.block % kDirectAlignment == 0 && o.block <= (size_t{1} << 30), ConfigError,
            "[bench disk] --block {} must be a multiple of 4096 bytes, at most 1G", o.block);
  ZDP_CHECK(o.bytes >= o.block && o.bytes % o.block == 0, ConfigError,
            "[bench disk] --bytes {} must be a multiple of --block {}", o.bytes, o.block);
  ZDP_CHECK(o.depth >= 1 && o.depth <= 256, ConfigError, "[bench disk] --depth {} must be in [1, 256]", o.depth);
  std::error_code ec;
  ZDP_CHECK(std::filesystem::is_directory(o.dir, ec), ConfigError,
            "[bench disk] --dir {} is not a directory: give the directory whose disk to measure", o.dir);
  const double free = static_cast<double>(free_bytes(o.dir, "bench disk"));
  const double need = static_cast<double>(o.bytes) + 64.0 * (1 << 20);  // and a margin for the file system
  ZDP_CHECK(free >= need, ConfigError,
            "[bench disk] {} has {:.0f} MiB free, the file needs {:.0f} MiB and a 64 MiB margin: give a smaller "
            "--bytes or another --dir",
            o.dir, free / (1 << 20), static_cast<double>(o.bytes) / (1 << 20));
}

// One pass over the file, `depth` blocks in flight, each slot's buffer
// reused once its previous request finished. Seconds, wall clock.
double pass(AsyncIo& io, const ScratchFile& file, bool write, const DiskBenchOptions& o,
            const std::vector<std::unique_ptr<char, FreeDeleter>>& buffers) {
  std::vector<AsyncIo::Ticket> slot(buffers.size(), 0);
  const auto start = std::chrono::steady_clock::now();
  const size_t blocks = o.bytes / o.block;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t s = b % buffers.size();
    if (slot[s] != 0) io.wait(slot[s]);
    char* buffer = buffers[s].get();
    const uint64_t offset = b * o.block;
    slot[s] = write ? io.write(file.fd(), buffer, o.block, offset, file.path())
                    : io.read(file.fd(), buffer, o.block, offset, file.path());
  }
  io.wait_all();
  // Buffered writes are on the disk only after this; O_DIRECT ones may still
  // sit in the device's cache, which fdatasync flushes too.
  if (write) {
    ZDP_CHECK(::fdatasync(file.fd()) == 0, IoError, "[bench disk] fdatasync of {} failed: {} (check the disk)",
              file.path(), errno_text(errno));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

DiskBenchResult run_disk_bench(const DiskBenchOptions& options) {
  check_options(options);
  DiskBenchResult r{.options = options};
  const ScratchFile file(options.dir, fmt::format("zerodp-bench-disk-{}.tmp", ::getpid()), "bench disk",
                         ScratchFile::Name::kKeepUntilClosed);
  r.direct = file.direct();
  AsyncIo io(options.depth, options.backend);
  r.backend = io.backend();
  r.fallback_reason = io.fallback_reason();
  std::vector<std::unique_ptr<char, FreeDeleter>> buffers;
  for (int i = 0; i < options.depth; ++i) {
    // NOLINTNEXTLINE(cppcoreguidelines-no-malloc): O_DIRECT's alignment
    buffers.emplace_back(static_cast<char*>(std::aligned_alloc(kDirectAlignment, options.block)));
    ZDP_CHECK(buffers.back() != nullptr, IoError, "[bench disk] cannot allocate {} bytes", options.block);
    // Bytes that no file system compresses or skips: a counter per word.
    auto* words = reinterpret_cast<uint64_t*>(buffers.back().get());
    for (size_t w = 0; w < options.block / sizeof(uint64_t); ++w) words[w] = (w + 1) * 0x9E3779B97F4A7C15ull + i;
  }
  r.write_s = pass(io, file, true, options, buffers);
  // A buffered file's pages would serve the read from memory: drop them
  // (clean after fdatasync, so the kernel lets them go).
  if (!r.direct) ::posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED);
  r.read_s = pass(io, file, false, options, buffers);
  return r;
}

std::string format_disk_bench_text(const DiskBenchResult& r) {
  const DiskBenchOptions& o = r.options;
  std::string out =
      fmt::format("bench disk: {} ({}, {} requests in flight, {} KiB blocks, {})\n", o.dir, io_backend_name(r.backend),
                  o.depth, o.block >> 10, r.direct ? "O_DIRECT" : "buffered: the page cache dropped before the read");
  if (!r.fallback_reason.empty()) out += fmt::format("  not io_uring: {}\n", r.fallback_reason);
  out += fmt::format("  write {:>8.0f} MiB {:>8.2f} GB/s  ({:.3f} s, fdatasync included)\n",
                     static_cast<double>(o.bytes) / (1 << 20), r.write_bytes_per_s() / 1e9, r.write_s);
  out += fmt::format("  read  {:>8.0f} MiB {:>8.2f} GB/s  ({:.3f} s)\n", static_cast<double>(o.bytes) / (1 << 20),
                     r.read_bytes_per_s() / 1e9, r.read_s);
  return out;
}

std::string format_disk_bench_json(const DiskBenchResult& r) {
  const DiskBenchOptions& o = r.options;
  nlohmann::json j = {{"dir", o.dir},
                      {"bytes", o.bytes},
                      {"block", o.block},
                      {"depth", o.depth},
                      {"backend", io_backend_name(r.backend)},
                      {"direct", r.direct},
                      {"write_GBps", r.write_bytes_per_s() / 1e9},
                      {"read_GBps", r.read_bytes_per_s() / 1e9},
                      {"build", build_info().commit}};
  if (!r.fallback_reason.empty()) j["fallback"] = r.fallback_reason;
  return j.dump();
}

}  // namespace zerodp::bench
