// SPDX-License-Identifier: Apache-2.0
#include "plan/engine_memory.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>

#include "comm/shard.h"
#include "core/error.h"
#include "core/gather_schedule.h"
#include "core/offload_extents.h"
#include "model/gpt_config.h"
#include "optim/adafactor.h"
#include "optim/grad_utils.h"

namespace zerodp::plan {
namespace {

// zero::Engine's fill chunk (engine.cc, kChunkElements).
constexpr uint64_t kFillChunkElements = uint64_t{1} << 16;
// zero::kMaxReductionsInFlight (engine_config.h).
constexpr size_t kMaxReductionsInFlight = 2;
// Resident bytes beyond the request per large buffer (RankPrediction::
// allocator), and how many buffers besides the optimizer's two per unit may
// be live at once.
constexpr uint64_t kAllocatorBytesPerBuffer = 8192;
constexpr uint64_t kOtherBuffers = 16;
// The rank's comm thread, started by the engine: its stack and the malloc
// arena glibc gives a new thread (a heap padded by 128 KiB).
constexpr uint64_t kCommThreadBytes = uint64_t{256} << 10;

// zero::BufferPool as the engine uses it for the buckets category: buffers
// matched by exact byte size and kept, so what it holds from the second step
// on is, per size, the most buffers of that size out at once, summed.
class PoolModel {
 public:
  void take(uint64_t bytes) {
    Size& s = sizes_[bytes];
    s.most = std::max(s.most, ++s.out);
  }
  void give(uint64_t bytes) {
    if (bytes != 0) --sizes_[bytes].out;
  }
  uint64_t held() const {
    uint64_t total = 0;
    for (const auto& [bytes, s] : sizes_) total += bytes * s.most;
    return total;
  }

 private:
  struct Size {
    uint64_t out = 0, most = 0;
  };
  std::map<uint64_t, Size> sizes_;
};

// What the "buckets" category holds from the second step on (its peak): the
// engine's pooled buffers over one step's backward passes.
// `lagging`: buffers that the engine leaves to the comm thread (a
// reduction's input) come back only when the comm thread must have caught
// up; otherwise at once.
uint64_t simulate_buckets(const UnitSchedule& s, const EngineRun& run, bool lagging) {
  const size_t num_units = s.unit_counts.size();
  const int num_ops = static_cast<int>(s.op_units.size());
  // When each unit's gradient opens and closes, and whether it lives in the
  // compute copy (low precision's, of the largest unit) instead of the pool.
  const bool in_place = bf16_in_place(s, run);
  const GradSchedule grad = grad_schedule(
      s.grad_ops(in_place), run.dtype.is_low_precision() ? s.compute_copy_elements(in_place) : uint64_t{0});
  const std::vector<int>& last_op = grad.closes_at;
  std::vector<uint64_t> offsets(num_units, 0);
  for (size_t u = 1; u < num_units; ++u) offsets[u] = offsets[u - 1] + s.unit_counts[u - 1];
  const uint64_t dsize = run.dtype.size();
  const bool low = run.dtype.is_low_precision();
  // The backward accumulates into the gradient buffer itself: nothing pooled.
  if (backward_writes_grads(run.stage, low, run.grad_accum)) return 0;
  PoolModel pool;
  // A unit's fp32 gradient, pooled unless it lives in the compute copy.
  auto take_gradient = [&](size_t u) {
    if (grad.in_compute_copy[u] == GradSchedule::kPooled) pool.take(4 * s.unit_counts[u]);
  };
  auto give_gradient = [&](size_t u) {
    if (grad.in_compute_copy[u] == GradSchedule::kPooled) pool.give(4 * s.unit_counts[u]);
  };
  // The queued reductions' input buffers (0: none), oldest first: the engine
  // waits for the oldest once more than kMaxReductionsInFlight wait
  // (zero/engine_config.h).
  std::deque<uint64_t> queue;
  auto enqueue = [&](uint64_t bytes) {
    if (!lagging) return pool.give(bytes);
    queue.push_back(bytes);
    while (queue.size() > kMaxReductionsInFlight) {
      pool.give(queue.front());
      queue.pop_front();
    }
  };
  auto catch_up = [&] {
    for (uint64_t bytes : queue) pool.give(bytes);
    queue.clear();
  };
  // Stage 0's open bucket: capacity (elements; 0 = none), filled, lowest
  // flat element, and its pooled bytes (0: in place in the gradient buffer).
  uint64_t capacity = 0, filled = 0, lo = 0, bucket_bytes = 0;
  auto flush = [&] {
    if (capacity == 0) return;
    enqueue(bucket_bytes);
    capacity = 0;
    filled = 0;
  };
  for (int micro = 0; micro < run.grad_accum; ++micro) {
    // Stage 3's first gather of the next forward waits behind every queued
    // reduction; stages 0-2 never wait before the step's drain.
    if (traits(run.stage).gathers_on_acquire) catch_up();
    for (int i = num_ops - 1; i >= 0; --i) {
      const auto u = static_cast<size_t>(s.op_units[static_cast<size_t>(i)]);
      const uint64_t c = s.unit_counts[u];
      if (grad.deferred[static_cast<size_t>(i)]) continue;  // its weight part runs at the unit's opening op
      if (grad.opens_at[u] == i) take_gradient(u);          // the unit's fp32 gradient
      if (last_op[u] != i) continue;
      if (!s.exported.empty() && s.exported[u]) {
        give_gradient(u);  // copied out, given back at once
        continue;
      }
      if (traits(run.stage).reduce == GradReduce::kAllReduce) {
        // Packed into the open bucket while adjacent and while it has room;
        // otherwise that bucket goes to its all-reduce and a new one opens.
        if (capacity != 0 && (offsets[u] + c != lo || filled + c > capacity)) flush();
        if (capacity == 0) {
          // Filled downwards from this unit's end: never more than the
          // flat elements below it (as the engine sizes it).
          capacity = std::min(std::max(run.bucket_elements, c), offsets[u] + c);
          // The first micro-batch's bucket is the gradient buffer's own
          // range: nothing pooled, and its all-reduce runs in place.
          bucket_bytes = micro == 0 ? 0 : capacity * dsize;
          if (bucket_bytes != 0 && capacity == c && !low) {
            // A later micro-batch's bucket the unit fills alone: at fp32 its
            // gradient is the bucket, the reduction's input.
            capacity = 0;
            enqueue(4 * c);
            continue;
          }
          if (bucket_bytes != 0) pool.take(bucket_bytes);
        }
        filled += c;
        lo = offsets[u];
        give_gradient(u);
        continue;
      }
      if (!traits(run.stage).partitions_grads) {
        give_gradient(u);  // converted into the flat grads buffer, given back at once
        enqueue(0);
      } else if (low) {
        pool.take(dsize * c);  // the low-precision copy, taken while the fp32 one is out
        give_gradient(u);
        enqueue(dsize * c);
      } else {
        enqueue(4 * c);  // the fp32 gradient itself is the reduction's input
      }
    }
    flush();  // the end of each backward pass
  }
  catch_up();  // the step's drain
  return pool.held();
}

}  // namespace

uint64_t UnitSchedule::num_params() const {
  uint64_t n = 0;
  for (uint64_t c : unit_counts) n += c;
  return n;
}

GradOps UnitSchedule::grad_ops(bool bf16_in_place) const {
  GradOps ops;
  ops.counts = unit_counts;
  ops.units = op_units;
  ops.backward_reads = op_backward_reads;
  ops.backward_reads.resize(op_units.size(), true);
  ops.weight_grad_apart = op_weight_grad_apart;
  ops.weight_grad_apart.resize(op_units.size(), false);
  if (bf16_in_place) {
    for (size_t i = 0; i < op_units.size(); ++i) {
      const uint64_t widened = i < op_bf16_widened.size() ? op_bf16_widened[i] : 0;
      ops.copied.push_back(ops.backward_reads[i] ? widened : 0);
    }
    ops.grad_rows = unit_grad_rows;
    ops.grad_rows.resize(unit_counts.size(), 0);
  }
  return ops;
}

uint64_t UnitSchedule::compute_copy_elements(bool bf16_in_place) const {
  return zerodp::compute_copy_elements(grad_ops(bf16_in_place));
}

bool bf16_in_place(const UnitSchedule& schedule, const EngineRun& run) {
  return schedule.reads_bf16_weights && run.bf16_compute && run.dtype == Dtype::bf16();
}

uint64_t UnitSchedule::largest_unit() const {
  uint64_t m = 0;
  for (uint64_t c : unit_counts) m = std::max(m, c);
  return m;
}

void UnitSchedule::validate() const {
  ZDP_CHECK(!unit_counts.empty() && !op_units.empty(), ConfigError,
            "[plan] a unit schedule needs at least one unit and one op");
  for (int u : op_units) {
    ZDP_CHECK(u >= 0 && static_cast<size_t>(u) < unit_counts.size(), ConfigError,
              "[plan] an op reads unit {}, but the schedule has {} units", u, unit_counts.size());
  }
}

std::vector<std::vector<optim::TensorShape>> gpt_unit_tensors(const GptShape& shape) {
  shape.validate();
  const int C = shape.channels;
  const auto c = static_cast<size_t>(C);
  std::vector<std::vector<optim::TensorShape>> units;
  units.push_back({optim::tensor_shape(0, std::array{shape.vocab, C}),
                   optim::tensor_shape(static_cast<size_t>(shape.vocab) * c, std::array{shape.context, C})});
  // model::Gpt::tensors()' block, in flat order.
  const model::BlockLayout b = model::block_layout(C);
  std::vector<optim::TensorShape> block = {
      optim::tensor_shape(b.ln1w, std::array{C}),           optim::tensor_shape(b.ln1b, std::array{C}),
      optim::tensor_shape(b.qkvw, std::array{3 * C, C}),    optim::tensor_shape(b.qkvb, std::array{3 * C}),
      optim::tensor_shape(b.attprojw, std::array{C, C}),    optim::tensor_shape(b.attprojb, std::array{C}),
      optim::tensor_shape(b.ln2w, std::array{C}),           optim::tensor_shape(b.ln2b, std::array{C}),
      optim::tensor_shape(b.fcw, std::array{4 * C, C}),     optim::tensor_shape(b.fcb, std::array{4 * C}),
      optim::tensor_shape(b.fcprojw, std::array{C, 4 * C}), optim::tensor_shape(b.fcprojb, std::array{C})};
  std::sort(block.begin(), block.end(),
            [](const optim::TensorShape& x, const optim::TensorShape& y) { return x.offset < y.offset; });
  for (int l = 0; l < shape.layers; ++l) units.push_back(block);
  units.push_back({optim::tensor_shape(0, std::array{C}), optim::tensor_shape(c, std::array{C})});
  return units;
}

UnitSchedule gpt_unit_schedule(const GptShape& shape) {
  shape.validate();
  UnitSchedule s;
  s.unit_tensors = gpt_unit_tensors(shape);
  s.unit_counts.push_back(shape.embedding_params());
  s.op_units.push_back(0);
  s.embedding_unit = 0;
  for (int l = 0; l < shape.layers; ++l) {
    s.unit_counts.push_back(shape.block_params());
    s.op_units.push_back(1 + l);
  }
  s.unit_counts.push_back(shape.final_params());
  s.op_units.push_back(shape.layers + 1);
  s.op_units.push_back(0);  // the LM head, tied to the token embedding
  s.op_backward_reads.assign(s.op_units.size(), true);
  s.op_backward_reads.front() = false;  // the embedding's backward scatters into its gradient
  s.op_weight_grad_apart.assign(s.op_units.size(), false);
  s.op_weight_grad_apart.front() = true;  // the embedding's backward is all weight part
  s.op_weight_grad_apart.back() = true;   // the head's weight part waits for the embedding's
  // Read in place from bf16 (model::Gpt): a block widens 13 C floats (its
  // gains and biases), the final layernorm 2 C.
  s.reads_bf16_weights = true;
  s.op_bf16_widened.assign(s.op_units.size(), 0);
  const auto C = static_cast<uint64_t>(shape.channels);
  const auto layers = static_cast<size_t>(shape.layers);
  for (size_t l = 1; l <= layers; ++l) s.op_bf16_widened[l] = 13 * C;
  s.op_bf16_widened[layers + 1] = 2 * C;
  // The tied embedding's gradient can be made a few rows (of C) at a time.
  s.unit_grad_rows.assign(s.unit_counts.size(), 0);
  s.unit_grad_rows.front() = C;
  return s;
}

uint64_t owned_elements(std::span<const uint64_t> unit_counts, int ranks, int rank) {
  ZDP_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, ConfigError, "[plan] rank {} is not in [0, {})", rank, ranks);
  const auto n = static_cast<uint64_t>(ranks);
  const auto r = static_cast<uint64_t>(rank);
  uint64_t owned = 0;
  for (uint64_t c : unit_counts) owned += c / n + (r < c % n ? 1 : 0);
  return owned;
}

int partition_ranks(const EngineRun& run) {
  if (run.shard_group == 0) return run.ranks;
  ZDP_CHECK(run.shard_group >= 1 && run.shard_group <= run.ranks && run.ranks % run.shard_group == 0, ConfigError,
            "[plan] --shard-group-size {} does not divide the {} ranks; use a divisor of {} or leave it out",
            run.shard_group, run.ranks, run.ranks);
  return run.shard_group;
}

// --offload-optimizer: the optimizers the engine would make, with their
// states external, give each unit's extent (the engine's own arithmetic);
// what they still hold themselves (Adafactor's per-step factors) stays in
// RAM, booked as adam_v.
namespace {

void predict_offload(const UnitSchedule& schedule, const EngineRun& run, int rank, RankPrediction& p) {
  const int group = partition_ranks(run);
  const bool low = run.dtype.is_low_precision();
  std::vector<size_t> extents;
  uint64_t work = 0;
  uint64_t offset = 0;
  bool quantized = false;  // 8-bit Adam's block-quantized moments in some unit
  for (size_t u = 0; u < schedule.unit_counts.size(); ++u) {
    const uint64_t count = schedule.unit_counts[u];
    const comm::ShardRange upd =
        traits(run.stage).partitions_optimizer ? comm::shard_range(count, group, rank) : comm::ShardRange{0, count};
    optim::ShardOptions options;
    options.unit_offset = upd.offset;
    options.unit_flat_offset = offset;
    options.tensors = schedule.unit_tensors.empty() ? std::vector<optim::TensorShape>() : schedule.unit_tensors[u];
    options.external_states = true;
    const auto opt = optim::make_optimizer(
        optim::unit_optimizer_config(run.optimizer, count, static_cast<int>(u) == schedule.embedding_unit), upd.count,
        std::move(options));
    extents.push_back(optim::offload_extent_bytes(*opt, low));
    work += opt->booked_bytes(optim::StateKind::kExpAvgSqFactored);
    quantized = quantized || opt->quant_block_size() > 0;
    offset += count;
  }
  p.master = p.adam_m = 0;
  p.adam_v = work;
  p.offload = offload_staging_bytes(extents);
  p.disk = offload_disk_bytes(extents);
  int reads = 1, writes = 1;
  if (optim::optimizer_bytes_per_param(run.optimizer, false).tensor_stats) {
    reads += 3;  // the two rounds' statistics, and round 0's update of the factored moment
    writes += 1;
  } else if (quantized && traits(run.stage).partitions_optimizer && group > 1) {
    reads += 1;  // the block maxima that shards share
  }
  p.disk_read_per_step = reads * p.disk;
  p.disk_written_per_step = writes * p.disk;
}

// --offload-params: the parameters leave RAM for one staging buffer of the
// largest shard (zero/param_store.h); every gather reads its unit's shard
// and every step writes each shard once.
void predict_param_offload(const UnitSchedule& schedule, const EngineRun& run, int rank, RankPrediction& p) {
  ZDP_CHECK(traits(run.stage).partitions_params && run.dtype.is_low_precision(), ConfigError,
            "[plan] --offload-params needs stage 3 and bf16 or fp16 (stage 3 gathers the parameters; at fp32 they "
            "are the master weights, which --offload-optimizer moves)");
  const int group = partition_ranks(run);
  std::vector<size_t> shards;
  for (const uint64_t count : schedule.unit_counts) {
    shards.push_back(comm::shard_range(count, group, rank).count * run.dtype.size());
  }
  const std::vector<int> gathers = unit_gathers_per_micro(schedule, run.prefetch);
  uint64_t read = 0;
  for (size_t u = 0; u < shards.size(); ++u)
    read += static_cast<uint64_t>(gathers[u]) * round_to_direct_block(shards[u]);
  p.params = 0;
  p.param_staging = param_staging_bytes(shards);
  p.param_disk = offload_disk_bytes(shards);
  p.param_disk_read_per_step = read * static_cast<uint64_t>(run.grad_accum);
  p.param_disk_written_per_step = p.param_disk;
  p.offload += p.param_staging;
  p.disk += p.param_disk;
  p.disk_read_per_step += p.param_disk_read_per_step;
  p.disk_written_per_step += p.param_disk_written_per_step;
}

}  // namespace

std::vector<int> unit_gathers_per_micro(const UnitSchedule& schedule, bool prefetch) {
  GatherOps ops;
  const GradOps grad = schedule.grad_ops();
  ops.counts = grad.counts;
  ops.units = grad.units;
  ops.backward_reads = grad.backward_reads;
  const GatherSchedule s = gather_schedule(ops, prefetch);
  std::vector<int> per_unit(schedule.unit_counts.size(), 0);
  for (size_t i = 0; i < ops.units.size(); ++i) per_unit[static_cast<size_t>(ops.units[i])] += s.gathers[i];
  return per_unit;
}

// The ledger of world rank `rank` is the one of rank `rank % G` of a flat
// run of G ranks (hybrid sharding partitions every group the same way),
// but for what depends on the world rank: the consolidated copy is rank
// 0's, and only its group gathers for it.
RankPrediction predict_engine_rank(const UnitSchedule& schedule, const EngineRun& run, int world_rank,
                                   uint64_t activation_bytes) {
  schedule.validate();
  check_ranks(run.ranks);
  ZDP_CHECK(world_rank >= 0 && world_rank < run.ranks, ConfigError, "[plan] rank {} is not in [0, {})", world_rank,
            run.ranks);
  const int group = partition_ranks(run);
  const int rank = world_rank % group;  // in the shard group
  ZDP_CHECK(run.grad_accum >= 1, ConfigError, "[plan] gradient accumulation {} must be at least 1", run.grad_accum);
  const BytesPerParam bpp = bytes_per_param(run.dtype, run.optimizer);
  const uint64_t phi = schedule.num_params();
  RankPrediction p;
  p.rank = world_rank;
  p.owned_elements = owned_elements(schedule.unit_counts, group, rank);
  const uint64_t owned = p.owned_elements;
  const uint64_t dsize = run.dtype.size();

  const StageTraits& stage = traits(run.stage);
  p.params = (stage.partitions_params ? owned : phi) * dsize;
  p.grads = (stage.partitions_grads ? owned : phi) * dsize;
  p.grads += extra_grad_elements(run.stage, run.grad_accum, owned, phi) * dsize;
  const uint64_t updated = stage.partitions_optimizer ? owned : phi;
  p.master = updated * static_cast<uint64_t>(bpp.master);
  p.adam_m = updated * static_cast<uint64_t>(bpp.moment1);
  p.adam_v = updated * static_cast<uint64_t>(bpp.moment2);
  const uint64_t scales = moment_extra_bytes(schedule.unit_counts, schedule.embedding_unit, group, rank,
                                             stage.partitions_optimizer, run.optimizer);
  p.adam_m += scales;
  p.adam_v += scales;
  p.adam_v += tensor_stats_bytes(schedule.unit_counts, schedule.unit_tensors, group, rank, stage.partitions_optimizer,
                                 run.optimizer);
  if (run.offload_optimizer) predict_offload(schedule, run, rank, p);
  if (run.offload_params) predict_param_offload(schedule, run, rank, p);

  const uint64_t largest = schedule.largest_unit();
  if (run.dtype.is_low_precision()) p.compute_copy = 4 * schedule.compute_copy_elements(bf16_in_place(schedule, run));
  p.gathered += p.compute_copy;
  p.init_scratch = 4 * std::min<uint64_t>(kFillChunkElements, largest);
  if (run.consolidated_copy) {
    if (world_rank == 0) p.final_scratch += 4 * phi;
    if (stage.partitions_params && world_rank < group) p.final_scratch += largest * dsize;
  }
  if (stage.gathers_on_acquire) {
    const uint64_t pool = run.prefetch && schedule.op_units.size() > 1 ? 2 : 1;
    p.gathered += pool * largest * dsize;
  }
  p.buckets = simulate_buckets(schedule, run, /*lagging=*/false);
  p.buckets_bound = simulate_buckets(schedule, run, /*lagging=*/true);
  p.activations = activation_bytes;
  const comm::QuantFormat none{};
  // The engine's quantization blocks end at its tensors' starts.
  std::vector<std::vector<uint64_t>> tensor_starts;
  for (const std::vector<optim::TensorShape>& unit : schedule.unit_tensors)
    tensor_starts.push_back(optim::tensor_starts(unit));
  p.comm = comm::max_quantized_scratch(
      schedule.unit_counts, group, rank,
      stage.gathers_on_acquire ? comm::QuantFormat{run.quantize_weights, run.quantize_block} : none,
      stage.reduce == GradReduce::kReduceScatter ? comm::QuantFormat{run.quantize_grads, run.quantize_block} : none,
      tensor_starts);
  uint64_t comm_buffers = p.comm > 0 ? 1 : 0;
  // The gradient norm's scratch (zero/grad_norm.h), made before the fill.
  p.comm += optim::norm_scratch_floats(schedule.unit_counts.size(), group) * sizeof(float);
  ++comm_buffers;
  p.comm_at_fill = p.comm;
  if (optim::optimizer_bytes_per_param(run.optimizer, false).tensor_stats) {
    const optim::AdafactorStatsScratch stats = optim::adafactor_stats_scratch(
        schedule.unit_tensors, schedule.unit_counts.size(), group, stage.partitions_optimizer);
    p.comm += (stats.sums + stats.parts) * sizeof(float) + stats.acc * sizeof(double);
    comm_buffers += stats.parts > 0 ? 3 : 2;
  }
  p.load_scratch = run.load_scratch;
  p.allocator =
      kAllocatorBytesPerBuffer * (2 * schedule.unit_counts.size() + kOtherBuffers + comm_buffers) + kCommThreadBytes;
  return p;
}

}  // namespace zerodp::plan
