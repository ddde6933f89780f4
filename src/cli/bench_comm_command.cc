// SPDX-License-Identifier: Apache-2.0
// `zerodp bench comm`: an nccl-tests style table of the collectives on the
// chosen backend, with two baselines measured in the same run: OpenMPI's own
// collectives on the same sizes and a single-thread memcpy of the same bytes.
//
// With the thread backend the OpenMPI baseline runs in a child process group
// this command starts itself (`mpirun -np N zerodp bench comm
// --mpi-baseline-child ...`), one after the other, never concurrently. With
// --backend mpi the command must run under mpirun (it relaunches itself
// there when it is not) and measures both in the same processes.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_launch.h"
#include "comm/mpi.h"
#include "comm/shard.h"
#include "comm/world.h"
#include "core/aligned_buffer.h"
#include "core/convert.h"
#include "core/error.h"

namespace zerodp::cli {
namespace {

using comm::Collective;

struct BenchCommOptions {
  std::string backend = "thread";
  int ranks = 2;
  std::string dtype = "fp32";
  std::vector<std::string> collectives{"all_reduce", "reduce_scatter", "all_gather"};
  std::string min_bytes = "1K";
  std::string max_bytes = "256M";
  int iters = 0;
  bool quick = false;
  std::string baseline = "auto";
  double timeout_s = 120;
  bool baseline_child = false;  // internal: this process is the OpenMPI baseline under mpirun
};

struct Plan {
  comm::Backend backend;
  int ranks;
  Dtype dtype;
  std::vector<Collective> collectives;
  std::vector<size_t> sizes;  // bytes
  int iters;                  // 0: automatic
  double target_s;            // automatic iterations aim at this much time per size
};

// "1K", "64M", "1G" (KiB, MiB, GiB) or plain bytes.
size_t parse_size(const std::string& text, const char* flag) {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit = unit.substr(0, unit.size() - 2);
  if (unit == "B") unit.clear();
  const std::map<std::string, size_t> scale{
      {"", 1}, {"K", size_t{1} << 10}, {"M", size_t{1} << 20}, {"G", size_t{1} << 30}};
  const auto it = scale.find(unit);
  ZDP_CHECK(pos > 0 && it != scale.end() && value > 0, ConfigError,
            "[bench comm] {} '{}' is not a size: use bytes or K/M/G (KiB/MiB/GiB), e.g. 1K or 256M", flag, text);
  return static_cast<size_t>(value) * it->second;
}

Collective parse_collective(const std::string& name) {
  for (Collective c :
       {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast}) {
    if (name == comm::collective_name(c)) return c;
  }
  ZDP_THROW(ConfigError,
            "[bench comm] unknown collective '{}': use all_reduce, reduce_scatter, all_gather, broadcast or all", name);
}

Plan make_plan(const BenchCommOptions& o) {
  Plan p;
  p.backend = comm::parse_backend(o.backend);
  ZDP_CHECK(o.ranks >= 1 && o.ranks <= 256, ConfigError, "[bench comm] --ranks must be 1..256, got {}", o.ranks);
  p.ranks = o.ranks;
  p.dtype = Dtype::parse(o.dtype);
  for (const auto& name : o.collectives) {
    if (name == "all") {
      p.collectives = {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast};
      break;
    }
    p.collectives.push_back(parse_collective(name));
  }
  const size_t lo = parse_size(o.min_bytes, "--min-bytes");
  const size_t hi = parse_size(o.max_bytes, "--max-bytes");
  ZDP_CHECK(lo <= hi, ConfigError, "[bench comm] --min-bytes {} is larger than --max-bytes {}", o.min_bytes,
            o.max_bytes);
  ZDP_CHECK(o.iters >= 0, ConfigError, "[bench comm] --iters must be >= 0 (0 = automatic), got {}", o.iters);
  ZDP_CHECK(o.timeout_s > 0, ConfigError, "[bench comm] --timeout must be positive, got {}", o.timeout_s);
  for (size_t s = lo; s <= hi; s *= o.quick ? 4 : 2) {
    if (s >= p.dtype.size()) p.sizes.push_back(s / p.dtype.size() * p.dtype.size());
  }
  p.iters = o.iters;
  p.target_s = o.quick ? 0.05 : 0.2;
  return p;
}

// Every measurement is the best of kBatches batches of `iters` calls: on a
// shared machine, background load only ever makes a batch slower.
constexpr int kBatches = 3;

int auto_iters(const Plan& p, double one_call_s) {
  if (p.iters > 0) return p.iters;
  const double n = p.target_s / kBatches / std::max(one_call_s, 1e-7);
  return static_cast<int>(std::clamp(n, 3.0, 2000.0));
}

double bus_factor(Collective c, int n) {
  if (c == Collective::kBroadcast) return 1.0;
  const double f = static_cast<double>(n - 1) / n;
  return c == Collective::kAllReduce ? 2 * f : f;
}

// Seconds per call on this rank's communicator, the slowest rank's.
double time_ours(comm::Communicator& c, Collective kind, Dtype dtype, size_t count, const Plan& p,
                 AlignedBuffer<std::byte>& in, AlignedBuffer<std::byte>& out) {
  const comm::ShardRange own = comm::shard_range(count, c.size(), c.rank());
  comm::ConstBuffer src(in.data(), count, dtype);
  comm::Buffer dst(out.data(), count, dtype);
  auto once = [&] {
    switch (kind) {
      case Collective::kAllReduce:
        c.all_reduce(src, dst, comm::ReduceOp::kSum);
        break;
      case Collective::kReduceScatter:
        c.reduce_scatter(src, comm::Buffer(out.data(), own.count, dtype), comm::ReduceOp::kSum);
        break;
      case Collective::kAllGather:
        c.all_gather(comm::ConstBuffer(in.data(), own.count, dtype), dst);
        break;
      case Collective::kBroadcast:
        c.broadcast(dst, 0);
        break;
      default:
        break;
    }
  };
  using Clock = std::chrono::steady_clock;
  auto timed = [&](int iters) {
    c.barrier();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) once();
    c.barrier();
    const double local = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    return c.all_reduce_scalar(local, comm::ReduceOp::kMax);
  };
  once();  // first touch of the pages
  const int iters = auto_iters(p, timed(1));
  double best = timed(iters);
  for (int batch = 1; batch < kBatches; ++batch) best = std::min(best, timed(iters));
  return best;
}

// Copies a -> b (never back: a holds the collectives' inputs).
double time_memcpy(size_t bytes, const Plan& p, const AlignedBuffer<std::byte>& a, AlignedBuffer<std::byte>& b) {
  using Clock = std::chrono::steady_clock;
  auto timed = [&](int iters) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) std::memcpy(b.data(), a.data(), bytes);
    return std::chrono::duration<double>(Clock::now() - start).count() / iters;
  };
  timed(1);
  const int iters = auto_iters(p, timed(1));
  double best = timed(iters);
  for (int batch = 1; batch < kBatches; ++batch) best = std::min(best, timed(iters));
  return best;
}

// Results of one run, keyed by (collective, bytes).
struct Row {
  size_t count = 0;
  double ours_s = 0;
  double mpi_s = 0;  // 0: no baseline
  size_t mpi_count = 0;
  double memcpy_s = 0;
};
using Results = std::map<std::pair<Collective, size_t>, Row>;

// OpenMPI's collectives on every size; called on all ranks under mpirun.
void measure_native(const Plan& p, Results& results, bool print_lines) {
  for (Collective kind : p.collectives) {
    for (size_t bytes : p.sizes) {
      const size_t count = bytes / p.dtype.size();
      const double one = comm::mpi_native_time(kind, p.dtype, count, 1).seconds;
      // Every rank must agree on the iteration count: use the slowest rank's.
      const comm::NativeTiming t = comm::mpi_native_time(kind, p.dtype, count, auto_iters(p, one), kBatches);
      Row& row = results[{kind, bytes}];
      row.mpi_s = t.seconds;
      row.mpi_count = t.count;
      if (print_lines) {
        fmt::print("zerodp-baseline {} {} {} {:.9e}\n", comm::collective_name(kind), bytes, t.count, t.seconds);
      }
    }
  }
  std::fflush(stdout);
}

std::vector<std::string> child_args(const BenchCommOptions& o, const Plan& p, bool baseline_child) {
  std::vector<std::string> args{"bench",       "comm",
                                "--backend",   baseline_child ? "mpi" : o.backend,
                                "--ranks",     std::to_string(p.ranks),
                                "--dtype",     o.dtype,
                                "--min-bytes", o.min_bytes,
                                "--max-bytes", o.max_bytes,
                                "--iters",     std::to_string(o.iters),
                                "--baseline",  o.baseline,
                                "--timeout",   fmt::format("{}", o.timeout_s)};
  args.emplace_back("--collective");
  std::string joined;
  for (const auto& c : o.collectives) joined += (joined.empty() ? "" : ",") + c;
  args.push_back(joined);
  if (o.quick) args.emplace_back("--quick");
  if (baseline_child) args.emplace_back("--mpi-baseline-child");
  return args;
}

// Runs the OpenMPI baseline under mpirun and reads its lines; false (with a
// note) when it could not run.
bool run_baseline_child(const BenchCommOptions& o, const Plan& p, Results& results) {
  const std::string cmd = mpirun_command(p.ranks, child_args(o, p, true), "bench comm");
  fmt::print(stderr, "bench comm: OpenMPI baseline: {}\n", cmd);
  std::FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[512];
  int rows = 0;
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    char name[64];
    size_t bytes = 0, count = 0;
    double seconds = 0;
    if (std::sscanf(line, "zerodp-baseline %63s %zu %zu %lf", name, &bytes, &count, &seconds) == 4) {
      Row& row = results[{parse_collective(name), bytes}];
      row.mpi_s = seconds;
      row.mpi_count = count;
      ++rows;
    } else {
      std::fputs(line, stderr);
    }
  }
  const int status = pclose(pipe);
  if (status != 0) fmt::print(stderr, "bench comm: the OpenMPI baseline exited with status {}\n", status);
  return rows > 0;
}

void print_table(const Plan& p, const Results& results, const std::string& baseline_note) {
  const int n = p.ranks;
  fmt::print("# zerodp bench comm: backend {}, {} ranks, {}; baseline: {}; memcpy: one thread, same bytes\n",
             comm::backend_name(p.backend), n, p.dtype.name(), baseline_note);
  fmt::print(
      "# algbw = S/t, busbw = algbw * factor (all_reduce 2(n-1)/n, reduce_scatter and all_gather (n-1)/n, "
      "broadcast 1); GB/s = 1e9 bytes/s\n");
  for (Collective kind : p.collectives) {
    fmt::print("\n# {}\n", comm::collective_name(kind));
    fmt::print("{:>10} {:>11} {:>5} {:>11} {:>8} {:>8} {:>10} {:>8} {:>10} {:>9}\n", "size", "count", "type",
               "time(us)", "algbw", "busbw", "mpi_busbw", "vs_mpi", "memcpy_bw", "vs_memcpy");
    for (size_t bytes : p.sizes) {
      const auto it = results.find({kind, bytes});
      if (it == results.end()) continue;
      const Row& r = it->second;
      const double algbw = bytes / r.ours_s / 1e9;
      const double busbw = algbw * bus_factor(kind, n);
      const std::string size =
          bytes >= (size_t{1} << 20) ? fmt::format("{}MiB", bytes >> 20) : fmt::format("{}KiB", bytes >> 10);
      std::string mpi = "-", vs_mpi = "-";
      if (r.mpi_s > 0) {
        const double mpi_busbw = r.mpi_count * p.dtype.size() / r.mpi_s / 1e9 * bus_factor(kind, n);
        mpi = fmt::format("{:.3f}", mpi_busbw);
        if (mpi_busbw > 0) vs_mpi = fmt::format("{:.2f}x", busbw / mpi_busbw);
      }
      const double memcpy_bw = bytes / r.memcpy_s / 1e9;
      fmt::print("{:>10} {:>11} {:>5} {:>11.1f} {:>8.3f} {:>8.3f} {:>10} {:>8} {:>10.3f} {:>8.2f}x\n", size, r.count,
                 p.dtype.name(), r.ours_s * 1e6, algbw, busbw, mpi, vs_mpi, memcpy_bw, busbw / memcpy_bw);
    }
  }
  std::fflush(stdout);
}

// Our collectives and memcpy, on every rank of the chosen backend; rank 0
// fills `results`.
void measure_ours(const Plan& p, const comm::CommOptions& options, Results& results, bool with_native) {
  const size_t max_bytes = p.sizes.empty() ? 0 : p.sizes.back();
  comm::run_ranks(p.backend, p.ranks, options, [&](comm::Communicator& c) {
    AlignedBuffer<std::byte> in(max_bytes), out(max_bytes);
    // Inputs of 1.0: sums stay finite and ordinary in every dtype.
    const size_t max_count = max_bytes / p.dtype.size();
    std::vector<float> ones(std::min<size_t>(max_count, 1 << 16), 1.0f);
    for (size_t at = 0; at < max_count; at += ones.size()) {
      const size_t n = std::min(ones.size(), max_count - at);
      convert(ones.data(), Dtype::fp32(), in.data() + at * p.dtype.size(), p.dtype, n);
    }
    for (Collective kind : p.collectives) {
      for (size_t bytes : p.sizes) {
        const size_t count = bytes / p.dtype.size();
        const double t = time_ours(c, kind, p.dtype, count, p, in, out);
        // memcpy right after, on rank 0 alone while the others
        // wait: the pair sees the same machine load.
        if (c.rank() == 0) {
          Row& row = results[{kind, bytes}];
          row.ours_s = t;
          row.count = count;
          row.memcpy_s = time_memcpy(bytes, p, in, out);
        }
        c.barrier();
      }
    }
    if (with_native) {
      Results native;
      measure_native(p, native, false);
      if (c.rank() == 0) {
        for (const auto& [key, row] : native) {
          results[key].mpi_s = row.mpi_s;
          results[key].mpi_count = row.mpi_count;
        }
      }
    }
  });
}

void run_bench_comm(const BenchCommOptions& o) {
  const Plan p = make_plan(o);
  comm::CommOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  ZDP_CHECK(o.baseline == "auto" || o.baseline == "mpi" || o.baseline == "none", ConfigError,
            "[bench comm] --baseline must be auto, mpi or none, got '{}'", o.baseline);
  if (o.baseline_child) {
    measure_native(p, *std::make_unique<Results>(), comm::mpi_world_rank() == 0);
    return;
  }
  if (p.backend == comm::Backend::kMpi) {
    ZDP_CHECK(comm::mpi_available(), ConfigError,
              "[bench comm] this zerodp was built without MPI; use --backend thread");
    if (!comm::mpi_launched()) {
      const std::string cmd = mpirun_command(p.ranks, child_args(o, p, false), "bench comm");
      fmt::print(stderr, "bench comm: relaunching under mpirun: {}\n", cmd);
      const int status = std::system(cmd.c_str());
      ZDP_CHECK(status == 0, Error, "[bench comm] the mpirun run failed (status {})", status);
      return;
    }
    ZDP_CHECK(comm::mpi_world_size() == p.ranks, ConfigError,
              "[bench comm] --ranks {} but mpirun started {} processes; use mpirun -np {}", p.ranks,
              comm::mpi_world_size(), p.ranks);
    Results results;
    const bool native = o.baseline != "none";
    measure_ours(p, options, results, native);
    if (comm::mpi_world_rank() == 0) {
      print_table(p, results, native ? "OpenMPI collectives in the same processes" : "none");
    }
    return;
  }
  Results results;
  std::string note = "none";
  if (o.baseline != "none") {
    const bool can = comm::mpi_available() && !comm::mpiexec_path().empty();
    ZDP_CHECK(can || o.baseline == "auto", ConfigError,
              "[bench comm] --baseline mpi needs a build with MPI and mpirun; use --baseline none");
    if (can && run_baseline_child(o, p, results)) {
      note = fmt::format("OpenMPI (mpirun -np {}, run just before)", p.ranks);
    } else if (o.baseline == "mpi") {
      ZDP_THROW(Error, "[bench comm] the OpenMPI baseline did not run (see the messages above)");
    }
  }
  measure_ours(p, options, results, false);
  print_table(p, results, note);
}

}  // namespace

void add_bench_comm_command(CLI::App& bench) {
  auto o = std::make_shared<BenchCommOptions>();
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
  cmd->add_flag("--quick", o->quick, "sizes step by 4x and about 0.05 s per size (a smoke run)");
  cmd->add_option("--baseline", o->baseline, "OpenMPI baseline: auto (when MPI and mpirun exist), mpi (required), none")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "seconds a collective may wait for a peer before failing")
      ->capture_default_str();
  cmd->add_flag("--mpi-baseline-child", o->baseline_child,
                "internal: run only OpenMPI's collectives and print machine-readable lines (used under mpirun)");
  cmd->callback([o] { run_bench_comm(*o); });
}

}  // namespace zerodp::cli
