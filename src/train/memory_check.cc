// SPDX-License-Identifier: Apache-2.0
#include "train/memory_check.h"

#include <fmt/format.h>
#include <sys/vfs.h>

#include <filesystem>

#include "comm/mpi.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "core/scratch_file.h"

namespace zerodp::train {

plan::RunShape run_shape(const TrainConfig& config, int ranks, bool consolidated_copy, uint64_t load_scratch) {
  plan::RunShape shape;
  shape.stage = config.engine.stage;
  shape.ranks = ranks;
  shape.dtype = config.engine.dtype;
  shape.optimizer = config.engine.optimizer;
  shape.micro_batch = config.micro_batch;
  shape.seq_len = config.seq_len;
  shape.checkpointing = config.activation_checkpointing;
  shape.bf16_compute = config.engine.compute == kernels::Compute::kBf16;
  shape.grad_accum = config.engine.grad_accum;
  shape.prefetch = config.engine.prefetch;
  shape.bucket_elements = config.engine.bucket_elements;
  shape.consolidated_copy = consolidated_copy;
  shape.load_scratch = load_scratch;
  shape.quantize_weights = config.engine.quantize_weights;
  shape.quantize_grads = config.engine.quantize_grads;
  shape.quantize_block = config.engine.quantize_block;
  shape.shard_group = config.engine.shard_group_size;
  shape.offload_optimizer = !config.engine.offload_optimizer_dir.empty();
  shape.offload_params = !config.engine.offload_params_dir.empty();
  return shape;
}

namespace {

// One offload directory: it exists, is on a disk, and has room for `need`.
void check_offload_dir(const std::string& dir, const char* flag, uint64_t need, const char* what) {
  std::error_code ec;
  ZDP_CHECK(std::filesystem::is_directory(dir, ec), ConfigError,
            "[{}] {} is not a directory: give a directory on a local disk for the {}", flag, dir, what);
  // A RAM file system would hold the states in memory after all, beside
  // the plan's RAM: a run that the preflight let through could then be
  // killed for memory.
  struct statfs fs {};
  constexpr decltype(fs.f_type) kTmpfs = 0x01021994, kRamfs = static_cast<decltype(fs.f_type)>(0x858458f6);
  ZDP_CHECK(::statfs(dir.c_str(), &fs) != 0 || (fs.f_type != kTmpfs && fs.f_type != kRamfs), ConfigError,
            "[{}] {} is a RAM file system (tmpfs): the {} would stay in memory; give a directory on a disk", flag, dir,
            what);
  constexpr uint64_t kMargin = uint64_t{64} << 20;  // the file system's own
  const uint64_t free = free_bytes(dir, flag);
  ZDP_CHECK(free >= need + kMargin, ConfigError,
            "[{}] {} has {} free; this process's ranks need {} for their {} and a 64 MiB margin: free some space "
            "or give a directory on a larger disk",
            flag, dir, gib(free), gib(need), what);
}

}  // namespace

void check_offload_room(const TrainConfig& config, const plan::ProcessPrediction& process) {
  uint64_t states = 0, params = 0;
  for (const plan::RankPrediction& r : process.ranks) {
    params += r.param_disk;
    states += r.disk - r.param_disk;
  }
  const std::string& states_dir = config.engine.offload_optimizer_dir;
  const std::string& params_dir = config.engine.offload_params_dir;
  if (!states_dir.empty() && states_dir == params_dir) {
    return check_offload_dir(states_dir, "--offload-optimizer", states + params,
                             "optimizer states and parameter shards");
  }
  if (!states_dir.empty()) check_offload_dir(states_dir, "--offload-optimizer", states, "optimizer states");
  if (!params_dir.empty()) check_offload_dir(params_dir, "--offload-params", params, "parameter shards");
}

// --max-memory, or this machine's memory shared by the processes on it
// (Open MPI tells how many run here).
MemoryLimit memory_limit(const TrainConfig& config) {
  if (config.max_memory_bytes > 0) return {static_cast<uint64_t>(config.max_memory_bytes), "--max-memory"};
  uint64_t machine = machine_memory_bytes();
  std::string what = "this machine's memory";
  if (const uint64_t cgroup = cgroup_memory_limit_bytes(); cgroup > 0 && (machine == 0 || cgroup < machine)) {
    machine = cgroup;
    what = "this process's cgroup memory limit";
  }
  if (machine == 0) return {UINT64_MAX, "no limit (the machine's memory is unknown)"};
  int local = 1;
  if (config.backend == comm::Backend::kMpi) {
    if (const auto launch = comm::mpi_launch()) local = launch->processes_on_host;
  }
  if (local == 1) return {machine, what + " (--max-memory)"};
  return {machine / static_cast<uint64_t>(local), fmt::format("{} / {} processes on it (--max-memory)", what, local)};
}

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }
std::string mib(uint64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// The measured peak next to the plan, and how far the plan is above it.
std::string format_process_memory(const plan::ProcessPrediction& plan, uint64_t peak, bool mpi) {
  const uint64_t allocator = plan.allocator();
  const uint64_t ranks = plan.ranks_total() - allocator;
  const double over = peak > 0 ? 100.0 * (static_cast<double>(plan.total()) / static_cast<double>(peak) - 1.0) : 0.0;
  return fmt::format(
      "Process memory{}: peak resident {} measured; the plan {} = baseline {} (binary, libraries, data, OpenBLAS "
      "buffers) + {} rank{} at {} peak moment {} + allocator rounding {} ({:+.1f}% against the measurement)\n",
      mpi ? " (rank 0's process)" : "", mib(peak), mib(plan.total()), mib(plan.baseline), plan.ranks.size(),
      plan.ranks.size() == 1 ? "" : "s", plan.ranks.size() == 1 ? "its" : "their", mib(ranks), mib(allocator), over);
}

}  // namespace zerodp::train
