// SPDX-License-Identifier: Apache-2.0
// `zerodp bench comm`: an nccl-tests style table of the collectives on the
// chosen backend, with two baselines measured in the same run: OpenMPI's own
// collectives on the same sizes and a single-thread memcpy of the same bytes
// (the measuring and the table: bench/comm_bench.h).
//
// With the thread backend the OpenMPI baseline runs in a child process group
// this command starts itself (`mpirun -np N zerodp bench comm
// --mpi-baseline-child ...`), one after the other, never concurrently. With
// --backend mpi the command must run under mpirun (it relaunches itself
// there when it is not) and measures both in the same processes.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/comm_bench.h"
#include "bench/comm_bench_format.h"
#include "bench/comm_bench_parse.h"
#include "cli/commands.h"
#include "cli/mpi_launch.h"
#include "comm/mpi.h"
#include "core/error.h"

namespace zerodp::cli {
namespace {

using comm::Collective;

// The flags as given; child processes get them back as given.
struct BenchCommFlags {
  std::string backend = "thread";
  int ranks = 2;
  std::string dtype = "fp32";
  std::vector<std::string> collectives{"all_reduce", "reduce_scatter", "all_gather"};
  std::string min_bytes = "1K";
  std::string max_bytes = "256M";
  int iters = 0;
  int idle_ms = 0;
  bool quick = false;
  std::string baseline = "auto";
  double timeout_s = 120;
  bool json = false;
  std::vector<std::string> codecs;
  bool baseline_child = false;  // internal: this process is the OpenMPI baseline under mpirun
};

bench::CommBenchOptions to_options(const BenchCommFlags& f) {
  bench::CommBenchOptions o;
  o.backend = comm::parse_backend(f.backend);
  ZDP_CHECK(f.ranks >= 1 && f.ranks <= 256, ConfigError, "[bench comm] --ranks must be 1..256, got {}", f.ranks);
  o.ranks = f.ranks;
  o.dtype = Dtype::parse(f.dtype);
  o.collectives.clear();
  for (const auto& name : f.collectives) {
    if (name == "all") {
      o.collectives = {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast};
      break;
    }
    o.collectives.push_back(bench::parse_bench_collective(name));
  }
  const size_t lo = bench::parse_byte_size(f.min_bytes, "--min-bytes");
  const size_t hi = bench::parse_byte_size(f.max_bytes, "--max-bytes");
  ZDP_CHECK(lo <= hi, ConfigError, "[bench comm] --min-bytes {} is larger than --max-bytes {}", f.min_bytes,
            f.max_bytes);
  ZDP_CHECK(f.iters >= 0, ConfigError, "[bench comm] --iters must be >= 0 (0 = automatic), got {}", f.iters);
  ZDP_CHECK(f.idle_ms >= 0 && f.idle_ms <= 60000, ConfigError,
            "[bench comm] --idle-ms must be 0..60000 (milliseconds before each timed call), got {}", f.idle_ms);
  ZDP_CHECK(f.timeout_s > 0, ConfigError, "[bench comm] --timeout must be positive, got {}", f.timeout_s);
  o.sizes = bench::comm_bench_sizes(lo, hi, f.quick ? 4 : 2, o.dtype);
  o.iters = f.iters;
  o.idle_ms = f.idle_ms;
  o.target_s = f.quick ? 0.05 : 0.2;
  o.comm.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  for (const auto& name : f.codecs) {
    ZDP_CHECK(name == "int8" || name == "int4", ConfigError, "[bench comm] --codec '{}' is not int8 or int4", name);
    o.codecs.push_back(name == "int8" ? comm::Quantization::kInt8 : comm::Quantization::kInt4);
  }
  return o;
}

std::vector<std::string> child_args(const BenchCommFlags& f, bool baseline_child) {
  std::vector<std::string> args{"bench",       "comm",
                                "--backend",   baseline_child ? "mpi" : f.backend,
                                "--ranks",     std::to_string(f.ranks),
                                "--dtype",     f.dtype,
                                "--min-bytes", f.min_bytes,
                                "--max-bytes", f.max_bytes,
                                "--iters",     std::to_string(f.iters),
                                "--idle-ms",   std::to_string(f.idle_ms),
                                "--baseline",  f.baseline,
                                "--timeout",   fmt::format("{}", f.timeout_s)};
  args.emplace_back("--collective");
  std::string joined;
  for (const auto& c : f.collectives) joined += (joined.empty() ? "" : ",") + c;
  args.push_back(joined);
  if (f.quick) args.emplace_back("--quick");
  if (!f.codecs.empty() && !baseline_child) {
    std::string codecs;
    for (const auto& c : f.codecs) codecs += (codecs.empty() ? "" : ",") + c;
    args.emplace_back("--codec");
    args.push_back(codecs);
  }
  if (f.json && !baseline_child) args.emplace_back("--json");
  if (baseline_child) args.emplace_back("--mpi-baseline-child");
  return args;
}

// Runs the OpenMPI baseline under mpirun and reads its lines (other lines go
// to stderr); empty (with a note) when it could not run.
std::vector<bench::CommBaselineRow> run_baseline_child(const BenchCommFlags& f) {
  const std::string cmd = mpirun_command(f.ranks, child_args(f, true), "bench comm");
  fmt::print(stderr, "bench comm: OpenMPI baseline: {}\n", cmd);
  std::vector<bench::CommBaselineRow> rows;
  // mpirun_command quotes every argument for the shell.
  std::FILE* pipe = popen(cmd.c_str(), "r");  // NOLINT(cert-env33-c)
  if (pipe == nullptr) return rows;
  char line[512];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    if (const auto row = bench::parse_baseline_line(line)) {
      rows.push_back(*row);
    } else {
      fmt::print(stderr, "{}", line);
    }
  }
  const int status = pclose(pipe);
  if (status != 0) fmt::print(stderr, "bench comm: the OpenMPI baseline exited with status {}\n", status);
  return rows;
}

void print_table(const BenchCommFlags& f, const bench::CommBenchOptions& o,
                 const std::vector<bench::CommBenchRow>& rows, const std::vector<bench::CodecBenchRow>& codec_rows,
                 const std::string& baseline_note) {
  if (f.json) {
    fmt::print("{}\n", bench::format_comm_json(o, rows, codec_rows));
  } else {
    fmt::print("{}", bench::format_comm_table(o, rows, baseline_note));
    fmt::print("{}", bench::format_codec_table(o, codec_rows));
  }
  (void)std::fflush(stdout);
}

void run_bench_comm(const BenchCommFlags& f) {
  const bench::CommBenchOptions o = to_options(f);
  ZDP_CHECK(f.baseline == "auto" || f.baseline == "mpi" || f.baseline == "none", ConfigError,
            "[bench comm] --baseline must be auto, mpi or none, got '{}'", f.baseline);
  if (f.baseline_child) {
    const auto rows = bench::run_mpi_baseline(o);
    if (comm::mpi_world_rank() == 0) {
      for (const auto& row : rows) fmt::print("{}\n", bench::format_baseline_line(row));
    }
    (void)std::fflush(stdout);
    return;
  }
  if (o.backend == comm::Backend::kMpi) {
    ZDP_CHECK(comm::mpi_available(), ConfigError,
              "[bench comm] this zerodp was built without MPI; use --backend thread");
    if (!comm::mpi_launched()) {
      const std::string cmd = mpirun_command(o.ranks, child_args(f, false), "bench comm");
      fmt::print(stderr, "bench comm: relaunching under mpirun: {}\n", cmd);
      const int status = std::system(cmd.c_str());  // NOLINT(cert-env33-c,concurrency-mt-unsafe): quoted, one thread
      ZDP_CHECK(status == 0, Error, "[bench comm] the mpirun run failed (status {})", status);
      return;
    }
    ZDP_CHECK(comm::mpi_world_size() == o.ranks, ConfigError,
              "[bench comm] --ranks {} but mpirun started {} processes; use mpirun -np {}", o.ranks,
              comm::mpi_world_size(), o.ranks);
    const bool native = f.baseline != "none";
    std::vector<bench::CodecBenchRow> codec_rows;
    const auto rows = bench::run_comm_bench(o, native, &codec_rows);
    if (comm::mpi_world_rank() == 0) {
      print_table(f, o, rows, codec_rows, native ? "OpenMPI collectives in the same processes" : "none");
    }
    return;
  }
  std::vector<bench::CommBaselineRow> baseline;
  std::string note = "none";
  if (f.baseline != "none") {
    const bool can = comm::mpi_available() && !comm::mpiexec_path().empty();
    ZDP_CHECK(can || f.baseline == "auto", ConfigError,
              "[bench comm] --baseline mpi needs a build with MPI and mpirun; use --baseline none");
    if (can) baseline = run_baseline_child(f);
    if (!baseline.empty()) {
      note = fmt::format("OpenMPI (mpirun -np {}, run just before)", o.ranks);
    } else if (f.baseline == "mpi") {
      ZDP_THROW(Error, "[bench comm] the OpenMPI baseline did not run (see the messages above)");
    }
  }
  std::vector<bench::CodecBenchRow> codec_rows;
  auto rows = bench::run_comm_bench(o, false, &codec_rows);
  bench::merge_baseline(rows, baseline);
  print_table(f, o, rows, codec_rows, note);
}

}  // namespace

void add_bench_comm_command(CLI::App& bench) {
  auto o = std::make_shared<BenchCommFlags>();
  auto* cmd = bench.add_subcommand(
      "comm",
      "Collective bandwidth, nccl-tests style: for each size, time per call, algbw = S/t and busbw (the\n"
      "per-link bandwidth: algbw * 2(n-1)/n for all_reduce, * (n-1)/n for reduce_scatter and all_gather,\n"
      "* 1 for broadcast; S = full buffer bytes, GB/s = 1e9 B/s), next to two baselines from the same run:\n"
      "OpenMPI's MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather / MPI_Bcast on the same sizes\n"
      "(vs_mpi = our busbw / theirs) and a single-thread memcpy of S bytes (vs_memcpy = busbw / memcpy bw).\n"
      "Backend thread: ranks are threads of this process; the OpenMPI baseline runs first, in processes\n"
      "this command starts itself with 'mpirun -np RANKS zerodp bench comm --mpi-baseline-child ...'.\n"
      "Backend mpi: run under 'mpirun -np RANKS' (started for you if not); both are measured there.\n"
      "Sum reductions; inputs are 1.0; out of place; time = the slowest rank's mean over --iters calls,\n"
      "best of 3 such batches (on a shared machine, load only ever slows a batch down).\n"
      "Example: zerodp bench comm --ranks 2 --max-bytes 64M");
  cmd->add_option("--backend", o->backend, "thread (ranks as threads, default) or mpi (processes under mpirun)")
      ->capture_default_str();
  cmd->add_option("--ranks,-n", o->ranks, "number of ranks N")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "element type: fp32, fp16 or bf16")->capture_default_str();
  cmd->add_option("--collective", o->collectives,
                  "comma-separated: all_reduce, reduce_scatter, all_gather, broadcast, or all")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--min-bytes", o->min_bytes, "smallest buffer S (bytes, or K/M/G = KiB/MiB/GiB)")
      ->capture_default_str();
  cmd->add_option("--max-bytes", o->max_bytes, "largest buffer S; sizes double from min to max")->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed calls per batch; 0 = automatic (about 0.2 s per size in all, 3..2000)")
      ->capture_default_str();
  cmd->add_option("--idle-ms", o->idle_ms,
                  "idle every rank this long before each timed call, and time the calls alone. A run's collectives "
                  "follow compute, on an idle link; across a slow TCP link, calls back to back (0) can take turns on "
                  "its two directions and measure half its rate (docs/scale.md). Give 300 or more to calibrate "
                  "zerodp plan --predict across hosts")
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick, "sizes step by 4x and about 0.05 s per size (a smoke run)");
  cmd->add_option("--baseline", o->baseline, "OpenMPI baseline: auto (when MPI and mpirun exist), mpi (required), none")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "seconds a collective may wait for a peer before failing")
      ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "print the rows as JSON (what zerodp plan --predict --calibrate-comm reads; docs/plan.md) instead of "
                "the table; the OpenMPI baseline and memcpy columns are left out");
  cmd->add_option(
         "--codec", o->codecs,
         "comma-separated int8, int4: also time the compressed collectives' packing and unpacking "
         "(comm::quantize, dequantize_into) of each size on every rank at once; --json adds them as \"codec\", "
         "which zerodp plan --predict --calibrate-comm reads as the codec's cost per element")
      ->delimiter(',');
  cmd->add_flag("--mpi-baseline-child", o->baseline_child,
                "internal: run only OpenMPI's collectives and print machine-readable lines (used under mpirun)");
  cmd->callback([o] { run_bench_comm(*o); });
}

}  // namespace zerodp::cli
