// SPDX-License-Identifier: Apache-2.0
#include "train/rank_figures.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

namespace zerodp::train {
namespace {

// What each rank reports for the metrics file and the summary: its ledger
// and its counters of the last step (calls, bytes sent, bytes received and
// microseconds per collective). All integers and no padding, so the bytes
// that travel are exactly the values.
struct RankFigures {
  RankMemory memory;
  std::array<std::array<uint64_t, 4>, comm::kNumCollectives> comm{};  // calls, sent, received, microseconds
  uint64_t masked_targets = 0;                                        // zero::Engine::last_step_masked_targets
  uint64_t cpu_ns = 0;                                                // the step's CPU time, nanoseconds
  uint64_t comm_cpu_ns = 0;                                           // of it, the comm thread's
  uint64_t comm_wait_ns = 0;                                          // the compute thread's wait for it
  uint64_t runqueue_ns = 0;                                           // the compute thread's time off its core
};
static_assert(std::has_unique_object_representations_v<RankFigures>, "RankFigures must have no padding");

}  // namespace

AllRankFigures collect_figures(comm::Communicator& comm, const zero::Engine& engine, const comm::CommStats& step,
                               const zero::RankThreadTimes& step_times) {
  RankFigures mine;
  const auto ns = [](double seconds) { return static_cast<uint64_t>(std::max(0.0, seconds) * 1e9); };
  mine.cpu_ns = ns(step_times.cpu_seconds);
  mine.comm_cpu_ns = ns(step_times.comm_cpu_seconds);
  mine.comm_wait_ns = ns(step_times.comm_wait_seconds);
  mine.runqueue_ns = ns(step_times.runqueue_seconds);
  const zero::LedgerSnapshot ledger = engine.ledger().snapshot();
  for (size_t c = 0; c < zero::kNumMemoryCategories; ++c) {
    mine.memory.current[c] = ledger.categories[c].current;
    mine.memory.peak[c] = ledger.categories[c].peak;
  }
  mine.memory.model_states = ledger.model_states.current;
  mine.memory.owned = engine.plan().owned_count(engine.shard_rank());
  const optim::OptimizerBytesPerParam k =
      optim::optimizer_bytes_per_param(engine.config().optimizer, engine.config().dtype.is_low_precision());
  const bool low = engine.config().dtype.is_low_precision();
  for (size_t u = 0; u < engine.plan().num_units(); ++u) {
    const comm::ShardRange upd = engine.update_range(u);
    // 8-bit Adam's fp32-moment units hold their own K's bytes, not the run's.
    const optim::OptimizerBytesPerParam unit_k = optim::optimizer_bytes_per_param(engine.unit_optimizer(u), low);
    mine.memory.block_scales += 2 * optim::block_scale_bytes(unit_k, upd.offset, upd.count);
    mine.memory.fp32_moments += (unit_k.k() - k.k()) * upd.count;
  }
  mine.memory.tensor_stats = engine.tensor_stats_bytes();
  if (const zero::OffloadStore* store = engine.offload_store()) {
    // The block scales and fp32 units are on the disk with the rest.
    mine.memory.block_scales = mine.memory.fp32_moments = 0;
    mine.memory.disk = store->disk_bytes();
    mine.memory.disk_read = store->traffic().bytes_read;
    mine.memory.disk_written = store->traffic().bytes_written;
    mine.memory.disk_wait_us = static_cast<uint64_t>(store->traffic().wait_seconds * 1e6);
    mine.memory.disk_pass_us = static_cast<uint64_t>(store->traffic().pass_seconds * 1e6);
    mine.memory.disk_uring = store->backend() == IoBackend::kUring ? 1 : 0;
    mine.memory.disk_direct = store->direct() ? 1 : 0;
  }
  if (const zero::ParamStore* store = engine.param_store()) {
    const zero::ParamStore::Traffic& t = store->traffic();
    mine.memory.param_disk = store->disk_bytes();
    mine.memory.param_read = t.bytes_read;
    mine.memory.param_written = t.bytes_written;
    mine.memory.param_read_us = static_cast<uint64_t>(t.read_seconds * 1e6);
    mine.memory.param_write_us = static_cast<uint64_t>(t.write_seconds * 1e6);
    mine.memory.disk += mine.memory.param_disk;
    mine.memory.disk_read += t.bytes_read;
    mine.memory.disk_written += t.bytes_written;
  }
  for (int k = 0; k < comm::kNumCollectives; ++k) {
    const comm::CollectiveStats& s = step[static_cast<comm::Collective>(k)];
    mine.comm[k] = {s.calls, s.bytes_sent, s.bytes_received, static_cast<uint64_t>(std::max(0.0, s.seconds) * 1e6)};
  }
  mine.masked_targets = static_cast<uint64_t>(engine.last_step_masked_targets());
  AllRankFigures all;
  for (const RankFigures& r : comm.all_gather_value(mine)) {
    all.masked_targets += r.masked_targets;
    all.memory.push_back(r.memory);
    all.step_cpu_seconds.push_back(static_cast<double>(r.cpu_ns) / 1e9);
    all.step_comm_cpu_seconds.push_back(static_cast<double>(r.comm_cpu_ns) / 1e9);
    all.step_comm_wait_seconds.push_back(static_cast<double>(r.comm_wait_ns) / 1e9);
    all.step_runqueue_seconds.push_back(static_cast<double>(r.runqueue_ns) / 1e9);
    comm::CommStats& c = all.step_comm.emplace_back();
    for (int k = 0; k < comm::kNumCollectives; ++k) {
      comm::CollectiveStats& s = c[static_cast<comm::Collective>(k)];
      s.calls = r.comm[k][0];
      s.bytes_sent = r.comm[k][1];
      s.bytes_received = r.comm[k][2];
      s.seconds = static_cast<double>(r.comm[k][3]) / 1e6;
    }
  }
  return all;
}

}  // namespace zerodp::train
