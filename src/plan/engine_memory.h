// SPDX-License-Identifier: Apache-2.0
// What zero::Engine books in one rank's memory ledger, predicted from the
// model's unit schedule alone, category by category (the ledger's names):
//
//   params    stage 0-2: Φ x p            stage 3: owned(r) x p
//   grads     stage 0-1: Φ x g            stage 2-3: owned(r) x g
//             stage 1 with grad_accum > 1: owned(r) x g (the accumulator)
//                                          + Φ x g (the flat local-gradient
//                                          staging it reduce-scatters from)
//   master    fp16/bf16 only: stage 0 Φ x 4, stages 1-3 owned(r) x 4
//   adam_m    Adam m, SGD's momentum or Lion's m: (stage 0 ? Φ : owned(r)) x 4
//   adam_v    Adam v: the same
//   gathered  fp16/bf16: an fp32 compute copy of the largest unit; stage 3
//             adds its pool of gather buffers in the training dtype, each the
//             largest unit's size: 2 with prefetch (the current unit and the
//             next), 1 without (or when the schedule has one op)
//   buckets   the transient fp32 gradient of each unit while its backward ops
//             run (from its opening op, core/grad_schedule.h; none where it
//             lives in the fp16/bf16 compute copy), plus what it is reduced
//             from: at stage 0, from the second micro-batch of a step on,
//             a bucket of max(bucket_elements, unit) elements in the
//             training dtype that packs adjacent units until full (then
//             all-reduced, and a new one opened; the first micro-batch's
//             buckets are ranges of the grads buffer, reduced in place); at
//             stages 2-3 in fp16/bf16 a low-precision copy of the unit
//             (fp32 reduces the gradient itself); stage 1 converts
//             straight into its grads buffer. The engine pools them
//             (zero/buffer_pool.h): per byte size, the most out at once,
//             summed, held from the second step on. Simulated op by op over
//             the backward pass.
//   activations  the workspace's bytes (activations.h)
//   offload   --offload-optimizer: the store's staging buffers, three of the
//             largest unit extent (core/offload_extents.h); master, adam_m
//             and adam_v then hold only the optimizers' work buffers
//   comm      the gradient norm's scratch (optim::norm_scratch_floats), and
//             with compressed collectives one scratch buffer for them,
//             comm::max_quantized_scratch over the units (comm/quantize.h);
//             with Adafactor: the statistics reduction's buffers
//             (optim::adafactor_stats_scratch); allocated by the constructor
//   scratch   outside the step: the initialisation's (and --init-from's)
//             fp32 chunk of min(64Ki, largest unit) elements while the
//             constructor fills the parameters; at the end, with
//             consolidated_copy, rank 0's fp32 copy of the whole model for
//             the sample and the held-out answers (4Φ), and at stage 3 every
//             rank's one-unit gather buffer in the training dtype
//
// owned(r) = sum over units of the rank's shard, c/N plus one on the first
// c mod N ranks (comm::shard_range), so rank 0 is always the busiest.
//
// Buckets: `buckets` is the pool's size when every reduction finishes before
// the next backward op takes a buffer (exact with EngineConfig::overlap off, and a
// lower bound with it on); `buckets_bound` is the worst case with the comm
// thread lagging: the latest kMaxReductionsInFlight (2) reductions' buffers
// still queued, as the engine waits for the oldest beyond that (stage 3's
// first gather of a micro-batch also waits behind them all). The ledger's
// measured peak lies between the two.
// Every other category is allocated once by the constructor (or, for stage
// 3's gather pool, by the first forward) and stays. So the ledger's total
// peak is the largest of three moments: the constructor's fill (model
// states, the compute copy, the chunk), a step (model states, gathered,
// buckets, activations) and the end's consolidated copy (the same with the
// copy in place of the buckets: the engine trims their pool first).
// Thread-safety: all functions are pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "core/grad_schedule.h"
#include "plan/memory_model.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

// The model as the engine schedules it: the units' element counts in flat
// order, and for each op of the forward schedule the unit it reads.
struct UnitSchedule {
  std::vector<uint64_t> unit_counts;
  std::vector<int> op_units;
  // Each unit's parameter tensors (unit-relative), for Adafactor's factored
  // statistics; empty when unknown (each unit then counts as one vector).
  std::vector<std::vector<optim::TensorShape>> unit_tensors = {};
  // The unit the token embedding reads (GPT's unit 0, tied to the LM head),
  // or -1: 8-bit Adam keeps its moments in fp32 (optim::unit_optimizer_config).
  int embedding_unit = -1;
  // Per op: whether its backward reads its unit's weights
  // (model::Op::backward_reads_params); empty: every op's does.
  std::vector<bool> op_backward_reads = {};
  // Per op: whether its backward runs in two parts (model::Op::
  // weight_grad_apart: the LM head's); empty: none does.
  std::vector<bool> op_weight_grad_apart = {};
  // Per unit: its gradient leaves the engine after its backward instead of
  // being reduced (a pipeline's last stage's copy of the tied embedding,
  // zero::Engine::StageLink::borrowed); empty: none.
  std::vector<bool> exported = {};
  // Whether the family's ops read bf16 units in place under bf16 products
  // (model::Model::reads_bf16_weights), and per op the floats they widen
  // then (model::Op::bf16_widened; empty: none).
  bool reads_bf16_weights = false;
  std::vector<uint64_t> op_bf16_widened = {};
  // Per unit: the elements of a row where its gradient can be made in rows
  // (model::UnitInfo::grad_row; empty: none).
  std::vector<uint64_t> unit_grad_rows = {};

  uint64_t num_params() const;
  uint64_t largest_unit() const;
  // Throws ConfigError when a list is empty or an op names a missing unit.
  void validate() const;
  // The ops as core/grad_schedule.h reads them (the defaults filled in);
  // `bf16_in_place` as model::grad_ops.
  GradOps grad_ops(bool bf16_in_place = false) const;
  // The engine's fp32 compute copy (elements) with mixed precision
  // (core/grad_schedule.h's compute_copy_elements).
  uint64_t compute_copy_elements(bool bf16_in_place) const;
};

// A GPT's schedule: units embedding, blocks, final layernorm; ops the same,
// then the tied LM head reading the embedding unit again.
UnitSchedule gpt_unit_schedule(const GptShape& shape);
// A GPT's tensors per unit, as model::Gpt::tensors() lays them out.
std::vector<std::vector<optim::TensorShape>> gpt_unit_tensors(const GptShape& shape);

// How the engine runs (zero::EngineConfig's fields that change memory).
struct EngineRun {
  Stage stage = Stage::k0;
  int ranks = 1;
  Dtype dtype = Dtype::fp32();
  optim::OptimizerConfig optimizer = {};
  int grad_accum = 1;
  bool prefetch = true;                 // stage 3
  uint64_t bucket_elements = 25 << 20;  // stage 0 (zero::EngineConfig::bucket_elements)
  bool consolidated_copy = false;       // rank 0 gathers an fp32 copy of the model at the end
  // A resume's read buffer (ckpt::read_scratch_bytes) or --init-from's
  // (weights::InitWeights::scratch_bytes); 0 = none.
  uint64_t load_scratch = 0;
  // The compressed collectives (zero::EngineConfig): used where the stage
  // has the collective (weights: stage 3's gathers; grads: the
  // reduce-scatter of stages 1-3), ignored elsewhere.
  comm::Quantization quantize_weights = comm::Quantization::kNone;
  comm::Quantization quantize_grads = comm::Quantization::kNone;
  uint32_t quantize_block = comm::kDefaultQuantBlock;  // elements per scale, for both
  // Hybrid sharding (zero::EngineConfig::shard_group_size): the model states
  // are partitioned over groups of this many consecutive ranks, as a flat
  // run of that many ranks partitions them. 0 = ranks (the flat layout).
  int shard_group = 0;
  // --offload-optimizer: the master weights and optimizer states on disk,
  // streamed through the store's staging buffers (zero/offload_store.h).
  bool offload_optimizer = false;
  // --offload-params (stage 3, bf16/fp16): the parameter shards on disk,
  // read for each gather through one staging buffer (zero/param_store.h).
  bool offload_params = false;
  // --compute bf16: with bf16 storage, a family that reads bf16 units in
  // place gets them so (UnitSchedule::reads_bf16_weights).
  bool bf16_compute = false;
};

// Whether the engine hands `schedule`'s ops their bf16 units in place.
bool bf16_in_place(const UnitSchedule& schedule, const EngineRun& run);

// Stage 3's gathers of each unit per micro-batch (core/gather_schedule.h,
// as the engine makes them).
std::vector<int> unit_gathers_per_micro(const UnitSchedule& schedule, bool prefetch);

// The partition's rank count of `run`: shard_group, or all ranks when 0.
int partition_ranks(const EngineRun& run);

// One rank's ledger, by category, in bytes (peaks; for everything but
// gathered/buckets also the current value after a step).
struct RankPrediction {
  int rank = 0;
  uint64_t owned_elements = 0;  // this rank's elements in the partition plan (of its shard group)
  uint64_t params = 0;
  uint64_t grads = 0;
  uint64_t master = 0;
  uint64_t adam_m = 0;
  uint64_t adam_v = 0;
  uint64_t gathered = 0;
  uint64_t buckets = 0;        // overlap off: exact; on: a lower bound
  uint64_t buckets_bound = 0;  // the worst case with overlap on
  uint64_t activations = 0;
  uint64_t comm = 0;  // the norm's, the compressed collectives' and Adafactor's scratch, from the constructor on
  uint64_t comm_at_fill = 0;   // the part of `comm` allocated before the parameters are filled (the collectives')
  uint64_t compute_copy = 0;   // the part of `gathered` the constructor allocates (fp16/bf16)
  uint64_t init_scratch = 0;   // the constructor's fill chunk
  uint64_t final_scratch = 0;  // the end's consolidated copy and gather buffer
  // Not booked in the ledger: a resume's checkpoint read buffer, or the
  // reader's buffer of --init-from, while the constructor's buffers and the
  // workspace exist.
  uint64_t load_scratch = 0;
  // Not booked in the ledger: rank 0's workspace for the sample and the
  // held-out answers (one sequence), beside the consolidated copy.
  uint64_t sample_workspace = 0;
  // What the allocator adds to the ledger's bytes in resident memory: each
  // large buffer is its own mapping, rounded up to pages with a header and
  // the 64-byte alignment (at most two pages), for the buffers live at once:
  // the optimizer's two per unit and a bounded few more (state buffers,
  // compute copy, gather pool, the workspace's arena, gradient transients);
  // and the comm thread's stack and malloc arena.
  uint64_t allocator = 0;
  // --offload-optimizer: the staging buffers (ledger: offload), from the
  // constructor on, and the file's bytes on disk (not in RAM). The master
  // and the states are then 0 but for work buffers (Adafactor's factors).
  uint64_t offload = 0;
  uint64_t disk = 0;
  // The bytes a step's passes over the file read and write: one update pass
  // (read and write every extent), plus one read for 8-bit Adam's shared
  // block maxima (stages 1-3 at more than one rank), or Adafactor's
  // statistics: two reads and an update.
  uint64_t disk_read_per_step = 0;
  uint64_t disk_written_per_step = 0;
  // --offload-params: the parts of the four above that are the parameter
  // store's (its staging buffer, from the constructor's start; its file;
  // each gather's read of its unit's shard; each step's write of every
  // shard), included in them.
  uint64_t param_staging = 0;
  uint64_t param_disk = 0;
  uint64_t param_disk_read_per_step = 0;
  uint64_t param_disk_written_per_step = 0;

  uint64_t model_states() const { return params + grads + master + adam_m + adam_v; }
  // What the constructor allocates besides the model states and stays.
  uint64_t resident_buffers() const { return compute_copy + comm + offload; }
  uint64_t scratch() const { return std::max(init_scratch, final_scratch); }
  // The total at each of the three moments (fill: the constructor's, or a
  // resume's right after it). The constructor fills the parameters before
  // it makes the optimizers: their moments, work buffers and Adafactor's
  // reduction scratch do not exist yet then.
  uint64_t fill() const {
    // With offload the optimizers and the store come first, then the fill;
    // the parameter store is made where the parameters would be.
    const uint64_t state_staging = offload - param_staging;
    const uint64_t made_first = state_staging > 0 ? state_staging + adam_m + adam_v : 0;
    return std::max(params + param_staging + grads + master + compute_copy + comm_at_fill + init_scratch + made_first,
                    model_states() + resident_buffers() + activations + load_scratch);
  }
  uint64_t step(uint64_t step_buckets) const {
    return model_states() + gathered + comm + offload + activations + step_buckets;
  }
  uint64_t end() const { return model_states() + gathered + comm + offload + activations + final_scratch; }
  // The ledger's total peak with the comm thread keeping pace.
  uint64_t total() const { return std::max({fill(), step(buckets), end()}); }
  // The worst case with the comm thread lagging.
  uint64_t total_bound() const { return std::max({fill(), step(buckets_bound), end()}); }
  // Resident memory of this rank alone: the worst-case peak with the sample's
  // workspace and the allocator's rounding.
  uint64_t resident() const { return std::max({fill(), step(buckets_bound), end() + sample_workspace}) + allocator; }
};

// Elements rank `rank` owns: sum over units of its comm::shard_range count.
uint64_t owned_elements(std::span<const uint64_t> unit_counts, int ranks, int rank);

// The prediction for one rank (0 <= rank < run.ranks; ConfigError otherwise,
// and for a stage outside 0..3, ranks < 1 or grad_accum < 1).
RankPrediction predict_engine_rank(const UnitSchedule& schedule, const EngineRun& run, int rank,
                                   uint64_t activation_bytes);

}  // namespace zerodp::plan
