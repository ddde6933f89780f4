// SPDX-License-Identifier: Apache-2.0
// `zerodp bench disk`: the sequential write and read bandwidth of a
// directory's disk, through the asynchronous I/O that disk streaming uses
// (bench/disk_bench.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "bench/comm_bench_parse.h"
#include "bench/disk_bench.h"
#include "cli/commands.h"
#include "core/error.h"

namespace zerodp::cli {
namespace {

struct BenchDiskFlags {
  std::string dir;
  std::string bytes = "256M";
  std::string block = "1M";
  int depth = 8;
  std::string io = "auto";
  bool json = false;
};

void run_bench_disk(const BenchDiskFlags& f) {
  bench::DiskBenchOptions o;
  o.dir = f.dir;
  o.bytes = bench::parse_byte_size(f.bytes, "--bytes");
  o.block = bench::parse_byte_size(f.block, "--block");
  o.depth = f.depth;
  ZDP_CHECK(f.io == "auto" || f.io == "threads", ConfigError, "[bench disk] --io '{}': use auto or threads", f.io);
  o.backend = f.io == "threads" ? IoBackend::kThreads : IoBackend::kUring;
  const bench::DiskBenchResult r = bench::run_disk_bench(o);
  fmt::print("{}", f.json ? bench::format_disk_bench_json(r) + "\n" : bench::format_disk_bench_text(r));
}

}  // namespace

void add_bench_disk_command(CLI::App& bench) {
  auto flags = std::make_shared<BenchDiskFlags>();
  auto* cmd = bench.add_subcommand(
      "disk", "Sequential write and read bandwidth of a directory's disk, through asynchronous I/O (io_uring)");
  cmd->add_option("--dir", flags->dir, "The directory whose disk to measure (a file is written there, then removed)")
      ->required();
  cmd->add_option("--bytes", flags->bytes, "The file's size (K, M, G)")->capture_default_str();
  cmd->add_option("--block", flags->block, "Bytes per request, a multiple of 4K")->capture_default_str();
  cmd->add_option("--depth", flags->depth, "Requests in flight")->capture_default_str();
  cmd->add_option("--io", flags->io,
                  "auto (io_uring where the kernel allows it, else threads) or threads (pread/pwrite); "
                  "ZERODP_IO=threads forces threads too")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "Print the result as one JSON object");
  cmd->callback([flags] { run_bench_disk(*flags); });
}

}  // namespace zerodp::cli
