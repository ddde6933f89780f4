// SPDX-License-Identifier: Apache-2.0
#include "plan/step_time.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/gather_schedule.h"
#include "core/offload_extents.h"
#include "plan/collective_cost.h"
#include "plan/engine_memory.h"

namespace zerodp::plan {
namespace {

// zero::kMaxReductionsInFlight (plan may not include zero).
constexpr size_t kMaxReductionsInFlight = 2;

// The compute thread's clock and the comm thread's, which runs what is
// submitted one task after another. With overlap off a task runs on the
// compute thread at once.
class Timeline {
 public:
  explicit Timeline(bool overlap) : overlap_(overlap) {}

  // Whether a task submitted now starts as the rank's previous collective
  // ends, with no compute between (Hardware::link_back_to_back).
  bool back_to_back() const { return last_comm_end_ >= (overlap_ ? std::max(now_, comm_free_) : now_); }
  // Returns when the task is done.
  double submit(double seconds) {
    comm_s_ += seconds;
    if (!overlap_) return last_comm_end_ = now_ += seconds;
    comm_free_ = std::max(now_, comm_free_) + seconds;
    return last_comm_end_ = comm_free_;
  }
  // A collective the compute thread calls itself.
  void call(double seconds) {
    comm_s_ += seconds;
    now_ += seconds;
    last_comm_end_ = std::max(last_comm_end_, now_);
  }
  void wait(double done) { now_ = std::max(now_, done); }
  void compute(double seconds) {
    // The comm thread is busy from its last idle moment to comm_free_.
    overlapped_s_ += std::clamp(comm_free_ - now_, 0.0, seconds);
    now_ += seconds;
  }
  void drain() { now_ = std::max(now_, comm_free_); }
  // engine.cc's limit_in_flight.
  void limit_in_flight(double done) {
    if (!overlap_) return;
    in_flight_.push_back(done);
    while (in_flight_.size() > kMaxReductionsInFlight) {
      wait(in_flight_.front());
      in_flight_.pop_front();
    }
  }
  void clear_in_flight() { in_flight_.clear(); }

  double now() const { return now_; }
  double comm_seconds() const { return comm_s_; }
  double overlapped_seconds() const { return overlapped_s_; }

 private:
  bool overlap_;
  double now_ = 0, comm_free_ = 0, comm_s_ = 0;
  double last_comm_end_ = -1;  // when the rank's last collective ended (none yet: before the step)
  double overlapped_s_ = 0;    // compute while the comm thread ran a collective
  std::deque<double> in_flight_;
};

// The machine as a collective that follows another one with no compute
// between sees it: the hosts' back-to-back link where one was fitted.
Hardware back_to_back_machine(const Hardware& hw) {
  Hardware busy = hw;
  if (hw.link_back_to_back.known()) busy.link = hw.link_back_to_back;
  return busy;
}

// The ranks a stage partitions over: the shard group, or all N (flat, and
// stage 0, which partitions nothing).
int partition_ranks(const StepTimeRun& run) {
  if (run.shard_group == 0 || run.stage == Stage::k0) return run.ranks;
  return run.shard_group;
}

struct Op {
  size_t unit = 0;
  double forward_s = 0, backward_s = 0;
  bool backward_reads_params = true;  // model::Op's: the embedding's backward reads none
};

// The engine's schedule of one step, on one rank.
class StepSimulation {
 public:
  StepSimulation(const GptShape& shape, const StepTimeRun& run, const Hardware& hw, bool overlap, double disk_s)
      : disk_s_(disk_s),
        run_(run),
        hw_(hw),
        busy_hw_(back_to_back_machine(hw)),
        traits_(traits(run.stage)),
        timeline_(overlap),
        group_(partition_ranks(run)),
        world_(flat_placement(run.ranks, hw)),
        shard_(shard_group_placement(run.ranks, group_, hw)),
        replica_(replica_group_placement(run.ranks, group_, hw)) {
    const double slice = hw.model_parallel;
    uint64_t offset = 0;
    for (const GptShape::Unit& u : shape.units()) {
      counts_.push_back(static_cast<double>(u.owned_params) / slice);
      offsets_.push_back(static_cast<double>(offset) / slice);
      offset += u.owned_params;
    }
    const double rate = hw.compute_flops() * slice;
    const double block_flops = shape.block_train_flops(run.micro_batch, run.seq_len);
    const double head_flops = shape.head_train_flops(run.micro_batch, run.seq_len);
    const double recompute = run.checkpointing ? 1.0 / 3 : 0;
    // The tied head's backward runs in two parts (core/grad_schedule.h):
    // its input gradient in turn, its weight gradient at the embedding's.
    ops_.push_back({0, 0, head_flops / 3 / rate, /*backward_reads_params=*/false});
    for (int l = 0; l < shape.layers; ++l) {
      ops_.push_back({static_cast<size_t>(1 + l), block_flops / 3 / rate, block_flops * (2.0 / 3 + recompute) / rate});
    }
    ops_.push_back({static_cast<size_t>(shape.layers + 1), 0, 0});
    ops_.push_back({0, head_flops / 3 / rate, head_flops / 3 / rate});
    last_backward_op_.assign(counts_.size(), -1);
    for (int i = static_cast<int>(ops_.size()) - 1; i >= 0; --i) last_backward_op_[ops_[i].unit] = i;
    // Stage 3's kept gathers (the tied embedding from its first forward op
    // to the LM head), as the engine decides them.
    pass_to_.assign(ops_.size(), -1);
    if (traits_.gathers_on_acquire) {
      GatherOps g;
      for (const GptShape::Unit& u : shape.units()) g.counts.push_back(u.owned_params);
      for (const Op& op : ops_) {
        g.units.push_back(static_cast<int>(op.unit));
        g.backward_reads.push_back(op.backward_reads_params);
      }
      pass_to_ = gather_schedule(g, run.prefetch).pass_to;
    }
    flops_per_micro_ = (shape.layers * block_flops * (1 + recompute) + head_flops) / slice;
  }

  StepTime run() {
    staging_.assign(counts_.size(), 0);
    for (int micro = 0; micro < run_.grad_accum; ++micro) {
      gathered_.assign(ops_.size(), std::nullopt);
      for (int i = 0; i < static_cast<int>(ops_.size()); ++i) run_op(i, +1, micro);
      for (int i = static_cast<int>(ops_.size()) - 1; i >= 0; --i) run_op(i, -1, micro);
      flush_bucket();
    }
    apply_step();
    StepTime t;
    for (const Op& op : ops_) t.compute_s += (op.forward_s + op.backward_s) * run_.grad_accum;
    t.optimizer_s = optimizer_s_;
    t.disk_s = disk_s_;
    t.param_write_s = param_write_s_;
    t.comm_s = timeline_.comm_seconds();
    t.scheduled_s = timeline_.now();
    t.overlapped_compute_s = timeline_.overlapped_seconds();
    t.sent_bytes = sent_;
    t.link_bytes = link_;
    t.flops = flops_per_micro_ * run_.grad_accum;
    t.collectives = collectives_;
    t.comm_terms = terms_;
    return t;
  }

 private:
  double bytes(double elements) const { return elements * static_cast<double>(run_.dtype.size()); }
  // A buffer as a collective sends it: plain, or packed (comm/quantize.h).
  double bytes(double elements, comm::Quantization q) const {
    if (q == comm::Quantization::kNone) return bytes(elements);
    const comm::QuantFormat f{.codes = q, .block = run_.quantize_block};
    return static_cast<double>(comm::quantized_bytes(static_cast<uint64_t>(elements), f));
  }

  // One collective over the communicator `p`, timed on the link as it is
  // when the collective starts: right after the rank's previous one, or
  // after compute. link_ is a host's link, all of its ranks' traffic
  // (link_bytes_per_exchange counts the sharing).
  double cost(CollectiveOp op, double buffer_bytes, const Placement& p) {
    ++collectives_;
    sent_ += sent_bytes(op, buffer_bytes, p.ranks);
    link_ += exchange_steps(op) * (p.ranks > 1 ? link_bytes_per_exchange(buffer_bytes, p, hw_) : 0);
    const double seconds = collective_seconds(op, buffer_bytes, p, timeline_.back_to_back() ? busy_hw_ : hw_);
    terms_.of(op) += seconds;
    return seconds;
  }

  // A collective over the shard group that may be quantized: its packed
  // bytes, and the codec on the comm thread (comm/communicator.cc): an
  // all-gather packs this rank's shard and unpacks every rank's, a
  // reduce-scatter packs the whole buffer and unpacks the N contributions to
  // its shard.
  double group_cost(CollectiveOp op, double elements, comm::Quantization q) {
    const double seconds = cost(op, bytes(elements, q), shard_);
    if (q == comm::Quantization::kNone || shard_.ranks <= 1) return seconds;
    const CodecCost& codec = hw_.codec(q);
    const double packed = op == CollectiveOp::kAllGather ? std::ceil(elements / shard_.ranks) : elements;
    const double codec_s = packed * codec.quantize_s + elements * codec.dequantize_s;
    terms_.codec_s += codec_s;
    return seconds + codec_s;
  }

  // --offload-params: this rank's shard of a unit as the parameter file
  // holds it (zero/param_store.h), and the seconds to move it at this
  // rank's share of the host's disk.
  double shard_file_bytes(size_t unit) const {
    const auto shard = static_cast<uint64_t>(std::ceil(counts_[unit] / group_));
    return static_cast<double>(round_to_direct_block(shard * run_.dtype.size()));
  }
  double disk_share() const { return std::min(hw_.ranks_per_host, run_.ranks); }

  double gather(int op) {
    double seconds = group_cost(CollectiveOp::kAllGather, counts_[ops_[op].unit], run_.quantize_weights);
    if (run_.offload_params) {
      const double read_s = shard_file_bytes(ops_[op].unit) * disk_share() / hw_.disk.read_Bps;
      terms_.param_read_s += read_s;
      seconds += read_s;
    }
    return timeline_.submit(seconds);
  }

  bool reads_params(int i, int direction) const { return direction > 0 || ops_[i].backward_reads_params; }

  // engine.cc's acquire (a backward op that reads no parameters skips it),
  // the model's forward or backward, release (a kept gather passes to the
  // unit's next forward op, and the forward's last op keeps its gather for
  // the backward's first), and after a unit's last backward op its reduction.
  void run_op(int i, int direction, int micro) {
    const int last = static_cast<int>(ops_.size()) - 1;
    if (traits_.gathers_on_acquire && reads_params(i, direction)) {
      if (!gathered_[i]) gathered_[i] = gather(i);
      const int next = i + direction;
      if (run_.prefetch && next >= 0 && next <= last && !gathered_[next] && reads_params(next, direction)) {
        gathered_[next] = gather(next);
      }
      timeline_.wait(*gathered_[i]);
    }
    const Op& op = ops_[i];
    timeline_.compute(direction > 0 ? op.forward_s : op.backward_s);
    if (direction > 0 && pass_to_[i] >= 0) {
      gathered_[pass_to_[i]] = gathered_[i];
      gathered_[i].reset();
    } else if (!(direction > 0 && i == last && reads_params(i, -1))) {
      gathered_[i].reset();
    }
    if (direction < 0 && last_backward_op_[op.unit] == i) reduce_unit(op.unit, micro);
  }

  void reduce_unit(size_t unit, int micro) {
    const double count = counts_[unit];
    if (traits_.reduce == GradReduce::kAllReduce) {
      const double start = offsets_[unit];
      if (bucket_capacity_ > 0 && (start + count != bucket_lo_ || bucket_filled_ + count > bucket_capacity_)) {
        flush_bucket();
      }
      if (bucket_capacity_ == 0) {
        bucket_capacity_ = std::min(std::max(static_cast<double>(run_.bucket_elements), count), start + count);
        bucket_filled_ = 0;
      }
      bucket_filled_ += count;
      bucket_lo_ = start;
      return;
    }
    // Stage 1 with accumulation stages into one buffer per unit: the
    // previous micro-batch's reduce-scatter of it must have run.
    if (!traits_.partitions_grads && run_.grad_accum > 1 && micro > 0) timeline_.wait(staging_[unit]);
    // One comm-thread task: the group's reduce-scatter, then (hybrid) the
    // shard's all-reduce across the groups, in the run's dtype.
    double seconds = group_cost(CollectiveOp::kReduceScatter, count, run_.quantize_grads);
    if (replica_.ranks > 1) seconds += cost(CollectiveOp::kAllReduce, bytes(std::ceil(count / group_)), replica_);
    staging_[unit] = timeline_.submit(seconds);
    timeline_.limit_in_flight(staging_[unit]);
  }

  void flush_bucket() {
    if (bucket_capacity_ == 0) return;
    timeline_.limit_in_flight(timeline_.submit(cost(CollectiveOp::kAllReduce, bytes(bucket_filled_), world_)));
    bucket_capacity_ = 0;
  }

  void apply_step() {
    timeline_.drain();
    timeline_.clear_in_flight();
    const double n = run_.ranks, g = group_;
    timeline_.call(cost(CollectiveOp::kSmall, 8.0 * run_.grad_accum * n, world_));  // the losses, over all N
    timeline_.call(cost(CollectiveOp::kSmall, 8.0 * g, shard_));                    // overflow flag, in the group
    timeline_.call(cost(CollectiveOp::kSmall, 8.0 * g, shard_));                    // norm, in the group
    double updated = 0;
    for (double count : counts_) updated += traits_.partitions_optimizer ? std::ceil(count / g) : count;
    optimizer_s_ = updated * hw_.optimizer_s_per_param;
    // Offload: the passes stream the disk while the optimizer computes; the
    // parameter shards' writes wait on the same disk, or follow the
    // optimizer on the rank's thread.
    if (run_.offload_params) {
      for (size_t u = 0; u < counts_.size(); ++u) {
        param_write_s_ += shard_file_bytes(u) * disk_share() / hw_.disk.write_Bps;
      }
    }
    StepTime phase;
    phase.optimizer_s = optimizer_s_;
    phase.disk_s = disk_s_;
    phase.param_write_s = param_write_s_;
    timeline_.compute(phase.optimizer_phase_s());
    if (traits_.refresh == ParamRefresh::kAllGather) {
      for (double count : counts_) timeline_.submit(cost(CollectiveOp::kAllGather, bytes(count), shard_));
    }
    timeline_.drain();
  }

  double disk_s_ = 0;
  double param_write_s_ = 0;
  const StepTimeRun& run_;
  const Hardware& hw_;
  const Hardware busy_hw_;  // back_to_back_machine(hw_)
  const StageTraits& traits_;
  Timeline timeline_;
  int group_;                             // the ranks the states are partitioned over, G (N when flat)
  Placement world_, shard_, replica_;     // all N ranks; the shard group; the replica group (N/G ranks)
  std::vector<double> counts_, offsets_;  // per unit, elements of this rank's slice
  std::vector<Op> ops_;
  std::vector<int> last_backward_op_;
  std::vector<int> pass_to_;  // per op: the forward op its gather passes to, or -1 (GatherSchedule's)
  std::vector<std::optional<double>> gathered_;  // per op: when its gather is done
  std::vector<double> staging_;                  // per unit: when its last reduce-scatter is done
  double bucket_capacity_ = 0, bucket_filled_ = 0, bucket_lo_ = 0;
  double flops_per_micro_ = 0, optimizer_s_ = 0, sent_ = 0, link_ = 0;
  int collectives_ = 0;
  CommTerms terms_;
};

void check_run(const StepTimeRun& run, const Hardware& hw) {
  ZDP_CHECK(run.ranks >= 1 && run.micro_batch >= 1 && run.seq_len >= 1 && run.grad_accum >= 1, ConfigError,
            "[plan] --predict needs N, micro-batch, sequence length and grad-accum of at least 1 (got {}, {}, {}, {})",
            run.ranks, run.micro_batch, run.seq_len, run.grad_accum);
  hw.validate();
  const int g = std::min(hw.ranks_per_host, run.ranks);
  ZDP_CHECK(run.ranks <= g || hw.link.known(), ConfigError,
            "[plan] --predict at {} ranks, {} per host, needs the link between hosts: give --link-bandwidth (e.g. "
            "1Gbit), --calibrate-comm (zerodp bench comm --json across hosts) or link in --hardware",
            run.ranks, hw.ranks_per_host);
  const int group = run.shard_group;
  ZDP_CHECK(group >= 0 && (group == 0 || run.ranks % group == 0), ConfigError,
            "[plan] --shard-group-size {} does not divide --ranks {}: use ranks that are multiples of it", group,
            run.ranks);
  // Consecutive ranks on a host: a group is a whole number of hosts, or a
  // host a whole number of groups; anything else straddles hosts unevenly.
  ZDP_CHECK(group == 0 || run.ranks <= g || group % g == 0 || g % group == 0, ConfigError,
            "[plan] --predict with --shard-group-size {} and --ranks-per-host {}: one must divide the other (a group "
            "of whole hosts, or whole groups on a host)",
            group, hw.ranks_per_host);
  ZDP_CHECK(g <= 1 || hw.local.known(), ConfigError,
            "[plan] --predict with {} ranks on a host needs their shared-memory link: give --local-bandwidth, "
            "--calibrate-comm (zerodp bench comm --json on one host) or local in --hardware",
            g);
}

}  // namespace

double& CommTerms::of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return all_reduce_s;
    case CollectiveOp::kReduceScatter:
      return reduce_scatter_s;
    case CollectiveOp::kAllGather:
      return all_gather_s;
    case CollectiveOp::kSmall:
      break;
  }
  return small_s;
}

double offload_disk_seconds(const GptShape& shape, const StepTimeRun& run, const Hardware& hw) {
  if (!run.offload_optimizer) return 0;
  ZDP_CHECK(hw.disk.known(), ConfigError,
            "[plan] --predict with --offload-optimizer needs the disk's rates: give --disk-bandwidth (e.g. 1.2GB or "
            "read,write 1.2GB,0.5GB) or --calibrate-disk (zerodp bench disk --json)");
  EngineRun engine{run.stage, run.ranks, run.dtype, run.optimizer, run.grad_accum, run.prefetch, run.bucket_elements};
  engine.shard_group = run.shard_group;
  engine.offload_optimizer = true;
  const RankPrediction p = predict_engine_rank(gpt_unit_schedule(shape), engine, 0, 0);
  // The host's ranks stream at once through its one disk.
  const double sharing = hw.ranks_on_host(run.ranks);
  return sharing *
         (static_cast<double>(p.disk_read_per_step) / hw.disk.read_Bps +
          static_cast<double>(p.disk_written_per_step) / hw.disk.write_Bps) /
         hw.model_parallel;
}

StepTime predict_step_time(const GptShape& shape, const StepTimeRun& run, const Hardware& hw) {
  check_run(run, hw);
  ZDP_CHECK(!run.offload_params || (traits(run.stage).partitions_params && run.dtype.is_low_precision()), ConfigError,
            "[plan] --offload-params needs stage 3 and bf16 or fp16");
  ZDP_CHECK(!run.offload_params || hw.disk.known(), ConfigError,
            "[plan] --predict with --offload-params needs the disk's rates: give --disk-bandwidth (e.g. 1.2GB or "
            "read,write 1.2GB,0.5GB) or --calibrate-disk (zerodp bench disk --json)");
  const double disk_s = offload_disk_seconds(shape, run, hw);
  StepTime t = StepSimulation(shape, run, hw, /*overlap=*/true, disk_s).run();
  const StepTime serial = StepSimulation(shape, run, hw, /*overlap=*/false, disk_s).run();
  t.serial_s = serial.scheduled_s;
  t.step_s = t.serial_s - hw.overlap_efficiency * (t.serial_s - t.scheduled_s);
  return t;
}

}  // namespace zerodp::plan
