// SPDX-License-Identifier: Apache-2.0
// Step time before the run (`zerodp plan --predict`): a GPT's training step
// at a ZeRO stage on N ranks, from the machine's alpha-beta links
// (plan/collective_cost.h), its compute rate and how much of the
// overlappable communication it hides (plan/hardware.h).
//
// The step is simulated as zero::Engine runs it (src/zero/engine.cc), with
// two clocks: the compute thread and the rank's comm thread, which runs the
// collectives submitted to it one after another, in order.
//   forward   op by op (embedding, blocks, final layernorm, the tied head);
//             stage 3 gathers the op's unit before it runs and submits the
//             gather of the next op's unit (prefetch)
//             (hybrid sharding: see StepTimeRun::shard_group for which
//             collectives run over which ranks)
//   backward  in reverse, stage 3 gathering the same way; after a unit's last
//             backward op its gradient is reduced on the comm thread: stage 0
//             packs adjacent units into buckets of bucket_elements and
//             all-reduces a full one, stages 1-3 reduce-scatter the unit; at
//             most kMaxReductionsInFlight (2) reductions wait, so a lagging
//             comm thread stalls the compute thread
//   step      wait for the comm thread; the loss all-gather and two scalar
//             all-reduces (overflow, norm) on the compute thread; the
//             optimizer on the elements the rank updates (all of them at
//             stage 0, its shards at stages 1-3); stages 1-2 all-gather
//             every unit's parameters, and wait
// An op's compute time is its training FLOPs at hw.compute_flops(); per
// token a block costs 72C^2 + 12TC (forward a third, backward two thirds,
// plus a forward again with activation checkpointing), the head 6VC, the
// embedding and the final layernorm nothing: model::Gpt's
// train_flops_per_position, op by op.
//
// serial (the engine with overlap off: every collective on the compute
// thread) is compute + optimizer + every collective. The schedule with the
// comm thread gives `scheduled`, what the engine could hide at best on this
// machine; the prediction takes overlap_efficiency of that saving:
//   step = serial - overlap_efficiency x (serial - scheduled).
// Thread-safety: all functions are pure.
#pragma once

#include <algorithm>
#include <cstdint>

#include "comm/quantize.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "optim/optimizer_config.h"
#include "plan/collective_cost.h"
#include "plan/hardware.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

// What about a run decides its step time (besides the model and the machine).
struct StepTimeRun {
  Stage stage = Stage::k0;
  int ranks = 1;  // N, data-parallel ranks
  Dtype dtype = Dtype::bf16();
  int micro_batch = 1;  // B per rank
  int seq_len = 1;      // T
  int grad_accum = 1;
  bool checkpointing = false;
  bool prefetch = true;                 // zero::EngineConfig::prefetch
  uint64_t bucket_elements = 25 << 20;  // zero::EngineConfig::bucket_elements (stage 0)
  // Compressed collectives (zero::EngineConfig): stage 3's gathers and the
  // gradient reduce-scatter send a buffer of comm::quantized_bytes, and pack
  // and unpack it on the comm thread at the machine's codec cost
  // (plan/hardware.h): an all-gather packs its shard and unpacks all N, a
  // reduce-scatter packs the whole buffer and unpacks N contributions to its
  // shard.
  comm::Quantization quantize_weights = comm::Quantization::kNone;
  comm::Quantization quantize_grads = comm::Quantization::kNone;
  uint32_t quantize_block = comm::kDefaultQuantBlock;  // elements per scale, for both
  // Hybrid sharding (zero::EngineConfig::shard_group_size), G; 0 = N, the
  // flat layout. Stages 1-3 partition over groups of G consecutive ranks:
  // the gradient reduce-scatter, stage 3's gathers, stages 1-2's parameter
  // all-gathers and the overflow and norm all-reduces run inside the group
  // (on shared memory when a group is a host), and each gradient
  // reduce-scatter is followed, in the same comm-thread task, by the
  // all-reduce of the rank's shard across the N/G groups (plain, never
  // quantized). The losses are all-gathered over all N. Stage 0 partitions
  // nothing and stays flat, as the engine and the planner have it.
  int shard_group = 0;
  // --offload-optimizer: the optimizer step streams the master weights and
  // states through the host's disk (Hardware::disk, shared by the host's
  // ranks): a step's reads and writes (the engine's passes,
  // plan/engine_memory.h) at its rates, overlapped with the optimizer's
  // arithmetic (the store reads ahead and writes behind): the optimizer
  // phase takes max(optimizer, disk).
  bool offload_optimizer = false;
  optim::OptimizerConfig optimizer = {};  // its passes and states (offload only)
  // --offload-params (stage 3): each gather first reads its unit's shard
  // from the host's disk on the comm thread (in the all-gather's task, so
  // prefetch hides it where compute is longer), and the step writes every
  // shard once on the rank's thread after the optimizer (or, with
  // --offload-optimizer, inside its passes, on the same disk).
  bool offload_params = false;
};

// comm_s by what it is made of: the seconds of each kind of collective
// (hybrid sharding's cross-group all-reduces among the all-reduces; the
// small ones: the losses, the overflow flag and the norm) and the compressed
// collectives' packing and unpacking on the comm thread. They add up to
// comm_s; `plan --predict` prints them beside each step time.
struct CommTerms {
  double all_reduce_s = 0;
  double reduce_scatter_s = 0;
  double all_gather_s = 0;
  double small_s = 0;
  double codec_s = 0;
  double param_read_s = 0;  // --offload-params: the gathers' reads of the parameter shards

  double total() const { return all_reduce_s + reduce_scatter_s + all_gather_s + small_s + codec_s + param_read_s; }
  // The term a collective of kind `op` adds to.
  double& of(CollectiveOp op);
};

struct StepTime {
  double compute_s = 0;      // forward + backward of every micro-batch
  double optimizer_s = 0;    // the optimizer on the elements this rank updates
  double disk_s = 0;         // --offload-optimizer: the step's reads and writes at this rank's share of the disk
  double param_write_s = 0;  // --offload-params: the step's writes of the parameter shards (the reads: comm_terms)
  double comm_s = 0;         // every collective of the step, one after another
  double scheduled_s = 0;    // the engine's schedule with the comm thread, all it can overlap hidden
  double serial_s = 0;       // compute + the optimizer's phase (below) + comm (overlap off)
  double step_s = 0;         // the prediction (overlap on)
  double sent_bytes = 0;     // per rank per step
  double link_bytes = 0;     // on a host's link per direction per step
  double flops = 0;          // model FLOPs per rank (per GPU with model parallelism) per step
  int collectives = 0;       // calls per step, the small ones included
  CommTerms comm_terms;      // comm_s, term by term
  // Of compute_s + the optimizer, the time the schedule runs a collective
  // on the comm thread beside it (each rank then has two busy threads).
  double overlapped_compute_s = 0;

  // The optimizer's phase on the rank's thread: with --offload-optimizer
  // its passes stream the disk while it computes, and the parameter shards'
  // writes (--offload-params) wait on the same disk; without, those writes
  // follow the optimizer.
  double optimizer_phase_s() const {
    return disk_s > 0 ? std::max(optimizer_s, disk_s + param_write_s) : optimizer_s + param_write_s;
  }
  double hidden_fraction() const { return comm_s > 0 ? (serial_s - step_s) / comm_s : 0; }
  // The communication the prediction hides: step = serial - hidden_s.
  double hidden_s() const { return serial_s - step_s; }
  // Achieved model FLOP/s per rank (per GPU).
  double flops_per_s() const { return step_s > 0 ? flops / step_s : 0; }
};

// ConfigError when the machine lacks a link the run needs (the link between
// hosts when N > ranks_per_host, the local one when ranks share a host) or
// the run is impossible (N < 1, B < 1, T < 1, grad_accum < 1, a shard group
// that does not divide N, or, across hosts, neither divides ranks_per_host).
StepTime predict_step_time(const GptShape& shape, const StepTimeRun& run, const Hardware& hw);

}  // namespace zerodp::plan
