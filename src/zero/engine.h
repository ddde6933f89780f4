// SPDX-License-Identifier: Apache-2.0
// Engine: trains one model with ZeRO on one rank of a communicator.
//
// It composes a PartitionPlan (who owns what), the model states of the
// chosen stage (StateBuffers for parameters, gradients and fp32 master
// weights), one optimizer per unit shard, a loss scaler (fp16), a comm thread
// (CommWorker) that runs this rank's collectives so they overlap compute, and
// drives the model's op schedule:
//
//   forward:  for op:            acquire(unit) -> model.forward  -> release
//   backward: for op reversed:   acquire(unit) -> model.backward -> release,
//                                then reduce the unit's gradient after its last op
//   step:     overflow check, global norm, clip+unscale, optimizer on the
//             owned shards, refresh the low-precision parameters
//
// What each stage partitions, which collective reduces the gradients, how
// the parameters are refreshed and whether acquire gathers a unit is the
// table in core/stage.h (traits(config.stage)); the engine reads it and
// never compares stage numbers. Gathering on acquire (stage 3) all-gathers a
// unit's parameters before each op that uses it (the next op's unit is
// prefetched on the comm thread) and drops them after.
//
// Compressed collectives (config.quantize_weights / quantize_grads): stage
// 3's gathers for compute and the gradient reduce-scatter go through
// comm's quantized collectives, sharing one scratch buffer (ledger: comm);
// checkpoints and gather_params stay exact. Their runs are deterministic
// in the same ways but are not the plain run's bits.
//
// Determinism: every micro-batch's gradients are reduced (comm/reduce.h's
// pairwise fp32 sum over ranks, rounded once) and added into a pairwise sum
// over the step's micro-batches (add_pairwise); norms and overflow flags are
// summed over the partition plan's shards in rank order; the optimizer is
// element-wise. So the same config gives the same bits at every stage and on
// every backend. And since rank r's micro-batch m is global micro-batch
// m * N + r (train/sampler.h), the sum over 2^a ranks of pairwise sums over
// m is the one pairwise tree over all M = N * grad_accum micro-batches: with
// fp32 gradients, every power-of-two N at the same M and micro-batch size
// gives the same bits (the gradient scale 1/M and the loss are the same
// too), clipped or not: the norm is summed in fixed blocks of each unit and
// added exactly (zero/grad_norm.h), so it does not depend on where N's
// shards cut. A bf16/fp16 run still depends on N: its reduced gradient
// rounds to the dtype at every micro-batch.
// Thread-safety: one Engine per rank, driven by that rank's thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/clock.h"
#include "core/gather_schedule.h"
#include "core/grad_schedule.h"
#include "model/model.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "zero/buffer_pool.h"
#include "zero/comm_worker.h"
#include "zero/engine_config.h"
#include "zero/memory_ledger.h"
#include "zero/offload_store.h"
#include "zero/param_store.h"
#include "zero/partition_plan.h"
#include "zero/state_buffer.h"
#include "zero/trainable.h"

namespace zerodp::zero {

struct StepResult {
  int64_t step = 0;        // optimizer steps taken so far (after this one)
  double loss = 0.0;       // mean over micro-batches and ranks
  double grad_norm = 0.0;  // global L2 norm of the unscaled gradient, before clipping
  double lr = 0.0;
  double loss_scale = 1.0;
  bool skipped = false;  // fp16 overflow: no update this step
  bool clipped = false;
};

class Engine final : public Trainable {
 public:
  // Initialises the parameters from `seed`: each rank generates only the
  // elements its stage holds, a chunk at a time, with the bits of a full
  // initialisation (model::Model::init_range); no rank builds the whole model.
  Engine(const model::Model& model, comm::Communicator& comm, const EngineConfig& config, uint64_t seed,
         int micro_batch, int seq_len, bool checkpointing = false);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step over grad_accum micro-batches.
  StepResult train_step(const BatchFeeder& feed) override;
  // Forward only on one micro-batch; returns the loss averaged over ranks.
  double eval_loss(const BatchFeeder& feed) override;
  Engine& engine() override { return *this; }

  // ---- pipeline stages (zero/pipeline.h) ----
  // What a pipeline stage's engine shares with the other stages; without a
  // link (the default) the engine is the whole model's.
  struct StageLink {
    // This replica's pipeline, one rank per stage in stage order: the step's
    // overflow flag, gradient norm and loss cross it.
    comm::Communicator* pipeline = nullptr;
    bool has_loss = false;  // the last stage: the step's losses are its micro-batches'
    // Per unit: another stage owns its gradient and update (the last stage's
    // copy of a tied unit). Its gradient goes to export_gradient instead of a
    // reduction, the norm and the optimizer skip it, and the pipeline writes
    // its parameters after each step (unit_params).
    std::vector<bool> borrowed;
    std::function<void(size_t unit, int micro, std::span<const float> grad)> export_gradient;
    // Fills a unit's gradient, as its first backward op opens it, with
    // another stage's part of it (the first stage's tied unit: the head's);
    // null or false: zeros.
    std::function<bool(size_t unit, int micro, std::span<float> grad)> seed_gradient;
  };
  // Stages 0-1 only (ConfigError otherwise). Before the first step.
  void link_stage(StageLink link);
  // A pipeline's step is its schedule of these, then finish_step with the
  // losses of the micro-batches this rank ran to the end (the last stage's;
  // none elsewhere). forward_micro runs every op on `ws` (the engine's
  // workspace() or one of add_workspace()'s); backward_micro runs them back
  // with micro_grad_scale() and reduces the gradients as micro-batch `micro`.
  void forward_micro(model::Workspace& ws);
  void backward_micro(model::Workspace& ws, int micro);
  StepResult finish_step(const std::vector<double>& local_losses);
  // d(objective)/d(a micro-batch's loss): the loss scale over the step's
  // micro-batches on every replica.
  float micro_grad_scale() const;
  // Another workspace of the engine's shape (a micro-batch in flight),
  // booked in the ledger as activations; it lives as long as the engine.
  model::Workspace& add_workspace();
  // Stages 0-1: unit u's whole low-precision parameters (ConfigError at 2-3).
  comm::Buffer unit_params(size_t unit);
  // A buffer of the caller's (a pipeline's message buffer), booked in this
  // engine's ledger while it lives.
  LedgerBuffer<float> book_floats(MemoryCategory category, size_t count) { return {ledger_, category, count}; }

  // Every parameter as fp32 master values (the fp32 parameters at fp32), in
  // flat order, on every rank: the whole model, for tests and small models.
  // Collective: all ranks must call it.
  std::vector<float> gather_master_params();
  // The low-precision parameters the model computes with, widened to fp32,
  // on every rank (tests, small models). Collective.
  std::vector<float> gather_params();
  // The same on `root` only, booked in this rank's ledger as scratch while
  // the copy lives (empty on the other ranks). Stage 3 gathers one unit at a
  // time, so the other ranks hold at most a unit. Collective.
  LedgerBuffer<float> gather_params_to(int root) override;
  // Starts from given weights instead of the seed's: each rank reads the
  // elements its stage holds from `source`, a chunk at a time, and rounds its
  // parameters from them. Call before the first step (optimizer state is
  // left as it is). Not collective.
  void load_params(const ParamSource& source) override;
  // load_params from one flat buffer of every parameter.
  void set_master_params(std::span<const float> flat);

  // ---- checkpoint access ----
  // One fp32 tensor of training state for one unit, over the elements this
  // rank's optimizer updates (update_range: the whole unit at stage 0, the
  // rank's own shard otherwise). name: "master" (the fp32 master weights, or
  // the fp32 parameters themselves at fp32), then the optimizer's state
  // names ("exp_avg", "exp_avg_sq" or "momentum_buffer").
  // 8-bit Adam's tensors: "exp_avg_q8"/"exp_avg_sq_q8" in `codes` (one byte
  // per element), and "exp_avg_absmax"/"exp_avg_sq_absmax", one fp32 per
  // 2048-element block of the unit the rank's elements touch (range in blocks).
  struct StateView {
    std::string name;
    size_t unit = 0;
    comm::ShardRange range;  // unit-relative values held in `data` or `codes`
    std::span<float> data;
    std::span<uint8_t> codes = {};
  };
  // Lion's bf16 momentum: "exp_avg", widened to fp32 in a scratch copy (as
  // below), narrowed back (exactly, for values that came from bf16) on load.
  // Adafactor's statistics: "exp_avg_sq_factored", packed one fp32 per
  // element of the unit over adafactor_packed_range (its rows and columns at
  // the start of each matrix the rank touches, v elsewhere), in a scratch
  // copy (booked) that the views point into until state_loaded() (which
  // reads it back) or release_state_views().
  // Writable views; a loader fills them, then calls state_loaded().
  // With --offload-optimizer a unit's views are reachable only between
  // open_unit_views(u) and close_unit_views(u), one unit at a time, in unit
  // order: they point into one staging buffer that holds that unit's extent
  // (ckpt::TrainingState::open_unit). close_unit_views(u, true) writes the
  // loaded unit back to the disk. Without offload both are no-ops.
  std::vector<StateView> state_views();
  void open_unit_views(size_t unit, bool loading);
  void close_unit_views(size_t unit, bool loaded);
  void release_state_views();
  // Everything else a resume needs (scalars, identical on every rank).
  struct Counters {
    int64_t steps = 0;            // optimizer steps taken (skipped fp16 steps excluded; the
                                  // trainer keeps the data position, which counts them)
    int64_t optimizer_steps = 0;  // Optimizer::step_count (steps minus fp16 skips)
    optim::LossScalerState scaler;
  };
  Counters counters() const;
  // After the views were overwritten: sets the counters and refreshes the
  // low-precision parameters from the master weights. Collective.
  void state_loaded(const Counters& counters);
  comm::ShardRange update_range(size_t unit) const;
  // The config of unit `unit`'s optimizer (optim::unit_optimizer_config: 8-bit
  // Adam's units that keep fp32 moments get AdamW's).
  const optim::OptimizerConfig& unit_optimizer(size_t unit) const { return unit_optimizers_[unit]; }
  // Adafactor: the bytes of this rank's factored second-moment statistics
  // and their per-step factors, booked as adam_v (beside K's whole bytes per
  // parameter; 0 for the other optimizers).
  uint64_t tensor_stats_bytes() const;

  // The plan over the shard group (G ranks; all N in the flat layout), and
  // this rank's place in it.
  const PartitionPlan& plan() const { return plan_; }
  int shard_rank() const { return rank_; }
  int shard_group_size() const { return shard_comm_.size(); }
  // The shard group's communicator (the world's in the flat layout).
  comm::Communicator& shard_communicator() { return shard_comm_; }
  // Hybrid sharding: the communicator of the N/G ranks that hold this rank's
  // shards, one per group (the gradient shards' all-reduce crosses the
  // groups on it); null in the flat layout. The run summary reads its
  // counters to tell the traffic across groups from the traffic inside one.
  comm::Communicator* replica_communicator() { return groups_.replica.get(); }
  const EngineConfig& config() const { return config_; }
  const MemoryLedger& ledger() const { return ledger_; }
  const model::Model& model() const { return model_; }
  model::Workspace& workspace() { return *workspace_; }
  comm::Communicator& communicator() { return comm_; }
  // The timeout of every communicator the engine calls (the world's and,
  // with hybrid sharding, its groups'). Not while the comm thread runs a
  // collective: between steps.
  void set_comm_timeout(std::chrono::milliseconds timeout) override;
  std::chrono::milliseconds comm_timeout() const override { return comm_.options().timeout; }
  int64_t steps_taken() const { return steps_; }
  // This rank's thread times so far: the CPU of the calling thread (call it
  // on the rank's own thread) and of its comm thread, the time the first
  // waited for the second, and the time it was ready but off its core. A
  // step's difference is what the step cost the rank, whatever else shares
  // the machine.
  RankThreadTimes thread_times() const {
    const double comm_cpu = worker_ ? worker_->cpu_seconds() : 0.0;
    return {.cpu_seconds = clock_seconds(ClockKind::kThreadCpu) + comm_cpu,
            .comm_cpu_seconds = comm_cpu,
            .comm_wait_seconds = worker_ ? worker_->waited_seconds() : 0.0,
            .runqueue_seconds = thread_runqueue_seconds()};
  }
  double loss_scale() const { return scaler_.scale(); }
  // This rank's targets that were the ignore id (no loss: a chat record's
  // prompt, padding) in the last train_step, over its micro-batches.
  int64_t last_step_masked_targets() const { return step_masked_targets_; }
  // --offload-optimizer: where the master weights and optimizer states live
  // and what their passes moved; null when they are in RAM.
  const OffloadStore* offload_store() const { return offload_.get(); }
  // --offload-params: where the stage-3 parameter shards live and what the
  // gathers and steps moved; null when they are in RAM.
  const ParamStore* param_store() const { return param_store_.get(); }

 private:
  struct Gathered;  // stage 3: a unit's parameters gathered on the comm thread
  struct Groups {
    std::unique_ptr<comm::Communicator> shard;    // the G ranks of this rank's group
    std::unique_ptr<comm::Communicator> replica;  // the N/G ranks holding the same shards
  };
  static Groups make_groups(comm::Communicator& comm, const EngineConfig& config);

  // then_backward: the last op's parameters stay acquired for the
  // backward's first op (held_).
  void forward_pass(model::Workspace& ws, bool then_backward);
  void backward_pass(model::Workspace& ws, int micro);
  // Whether op_index reads its parameters going in `direction` (+1 forward,
  // -1 backward: Op::backward_reads_params).
  bool reads_params(int op_index, int direction) const;
  // Stage 3: the forward op that takes op_index's gather, or -1
  // (GatherSchedule::pass_to; none at stages 0-2).
  int pass_to(int op_index) const;
  // The key of a compressed collective's stochastic rounding (engine.cc).
  uint64_t rounding_key(size_t unit, int micro, bool grads) const;
  // `format` for this step's collectives: kNone codes (plain) until
  // config.quantize_delay optimizer steps are taken.
  comm::QuantFormat format_now(comm::QuantFormat format) const;
  // Op op_index's unit, ready for compute: fp32 (the unit, or its compute
  // copy), or with bf16_in_place_ the bf16 unit itself and the compute
  // copy's first floats as the op's widening scratch. Stage 3 gathers it
  // (and prefetches the next op in `direction`).
  struct OpParams {
    std::span<const float> fp32 = {};
    std::span<const BFloat16> bf16 = {};
    std::span<float> widened = {};
  };
  OpParams acquire(int op_index, int direction);
  // The model's calls on either form of the parameters.
  void run_forward(int op_index, const OpParams& params, model::Workspace& ws);
  void run_backward(int op_index, const OpParams& params, std::span<float> grad, model::Workspace& ws);
  void run_backward_input(int op_index, const OpParams& params, model::Workspace& ws);
  // Stage 3 with prefetch: starts op_index's gather if it reads parameters
  // going in `direction` and none is under way.
  void prefetch(int op_index, int direction);
  void release(int op_index);
  std::shared_ptr<Gathered> start_gather(int op_index);
  // A unit's fp32 gradient while its backward is open, outside grads_: a
  // pooled buffer, or a range of compute_params_ (core/grad_schedule.h).
  struct OpenGradient {
    BufferPool::Handle pooled;
    std::span<float> data;
    explicit operator bool() const { return !data.empty(); }
    void reset() {
      pooled.reset();
      data = {};
    }
  };
  // The fp32 buffer op_index's backward accumulates its unit's gradient
  // into, zeroed when the unit's opening op (grad_schedule_.opens_at) opens
  // it, which then adds the unit's deferred weight parts: the unit's range
  // of grads_ itself where backward_writes_grads (core/stage.h), else its
  // range of the compute copy or a pooled scratch (grad_schedule_).
  // A pipeline's first stage may seed it (StageLink::seed_gradient).
  std::span<float> open_gradient(int op_index, int micro, model::Workspace& ws);
  bool borrowed(size_t unit) const { return !link_.borrowed.empty() && link_.borrowed[unit]; }
  void reduce_unit(size_t unit, int micro);
  // A unit whose gradient is made in rows (grad_schedule_.chunk_rows): the
  // rows one batch at a time in the compute copy, each rounded straight
  // into the buffer its reduction reads, then the reduction.
  void reduce_in_rows(size_t unit, int micro, model::Workspace& ws);
  // `scratch` is empty when the gradient already sits in grads_.
  void bucket_unit(size_t unit, OpenGradient scratch, int micro);
  // Stage 0, in two steps: where the unit's gradient goes (grads_' own
  // range for the first micro-batch, else its place in the pooled bucket;
  // the open bucket is flushed first where the unit cannot join it), and,
  // once it is there, the bucket's count (flushed when full).
  comm::Buffer bucket_slot(size_t unit, int micro);
  void bucket_filled(size_t unit, int micro);
  // Closes the open bucket where the unit cannot join it, and opens one.
  void open_bucket_for(size_t unit, int micro);
  void flush_bucket(int micro);
  // Stages 1-3: the buffer a unit's reduce-scatter reads, in the training
  // dtype (stage 1's full gradient, once its previous reduction has run, or
  // a pooled one, `bucket`), and the reduction submitted; `pooled` keeps an
  // fp32 gradient alive that is itself the input.
  comm::Buffer reduction_input(size_t unit, BufferPool::Handle& bucket);
  void submit_reduce_scatter(size_t unit, int micro, comm::Buffer staging, BufferPool::Handle bucket,
                             BufferPool::Handle pooled);
  // The step's loss: every rank's micro-batch losses in global micro-batch
  // order (micro * N + rank, the sampler's), pairwise summed, over their count.
  double step_loss(const std::vector<double>& local_losses);
  StepResult apply_step(const std::vector<double>& local_losses);
  // 8-bit Adam: every rank's optimizers get the maxima of the quantization
  // blocks their shards share with other ranks (a no-op otherwise). Collective.
  void share_block_maxima(float coefficient);
  // Adafactor: every rank's optimizers get the per-tensor statistics summed
  // over the plan's shards in rank order (a no-op otherwise). Collective at
  // stages 1-3.
  void share_tensor_stats(float coefficient);
  // fresh_states (offload only): the file is new, its states start here.
  void fill_params(const ParamSource& source, bool fresh_states = false);
  // Unit u's part of fill_params: the parameters this rank holds from
  // `source`, through `chunk`, and the master weights it updates into
  // `master` (empty at fp32, where the parameters are the master).
  void fill_unit(size_t u, const ParamSource& source, std::span<float> chunk, std::span<float> master);
  // Calls fn(u, master) for every unit in order with unit u's optimizer
  // states reachable and `master` the fp32 weights it updates: in place, or
  // with --offload-optimizer streamed from the disk by a pass of `pass`
  // (engine_offload.cc).
  using StateVisit = std::function<void(size_t unit, std::span<float> master)>;
  void visit_states(OffloadStore::Pass pass, const StateVisit& fn);
  // --offload-optimizer: the optimizers (states external) and the store of
  // their extents, filled with the starting weights and states.
  void make_offload_store(const std::vector<std::vector<optim::TensorShape>>& shapes, const ParamSource& source);
  // The bytes at the start of unit u's extent that hold its master weights
  // (0 at fp32), 64-byte aligned, the optimizer's states after them.
  size_t offload_master_bytes(size_t u) const;
  // The optimizers' config for each unit and their shard options (engine.cc).
  void make_optimizers(const std::vector<std::vector<optim::TensorShape>>& shapes, bool external_states);
  std::vector<uint64_t> unit_counts() const;
  // Every parameter into `full` (flat, fp32) when it is not empty; the other
  // ranks of a stage-3 gather pass an empty span and only take part.
  void gather_params_into(std::span<float> full);
  void refresh_params();
  // The rank's parameters of unit u over `range` (unit-relative, inside
  // what the rank holds), to write: in params_, or with --offload-params in
  // the param store's staging buffer, which params_written(u) then writes
  // to the disk (a no-op without it).
  comm::Buffer param_slice(size_t u, comm::ShardRange range);
  void params_written(size_t u);
  // The rank's shard of unit u's parameters, to read: with --offload-params
  // read into the store's staging buffer, valid until its next transfer.
  comm::ConstBuffer own_params(size_t u);
  // Unit u's low-precision parameters rounded from `master`, the fp32
  // weights this rank updates (refresh_params' rounding; with offload done
  // where the master is in RAM).
  void round_params(size_t u, std::span<const float> master);
  // The fp32 weights the optimizer updates: the master copy, or at fp32 the
  // parameters themselves.
  const StateBuffer& master_weights() const { return master_.allocated() ? master_ : params_; }
  // Collectives run on the comm thread when overlap is on, inline otherwise.
  CommWorker::Ticket submit(std::function<void()> task);
  void limit_in_flight(CommWorker::Ticket ticket);
  void wait(CommWorker::Ticket ticket);
  void drain();

  const model::Model& model_;
  comm::Communicator& comm_;  // the world: N ranks
  EngineConfig config_;
  Groups groups_;                   // hybrid sharding only (both empty in the flat layout)
  comm::Communicator& shard_comm_;  // groups_.shard, or comm_ in the flat layout
  PartitionPlan plan_;              // over shard_comm_'s ranks
  int rank_;                        // this rank in shard_comm_
  MemoryLedger ledger_;

  StateBuffer params_;        // storage dtype; flat (stages 0-2) or owned (3); empty with --offload-params
  StateBuffer grads_;         // the accumulator: flat (0-1) or owned (2-3)
  StateBuffer grad_staging_;  // stage 1 with accumulation: flat local grads before reduce-scatter
  // The pairwise sum's partials over micro-batches (pairwise_partials), laid
  // out like grads_.
  std::vector<StateBuffer> grad_partials_;
  StateBuffer master_;                       // fp32; flat (0) or owned (1-3); empty at fp32 (params are the master)
  std::unique_ptr<OffloadStore> offload_;    // --offload-optimizer; master_ is then empty
  std::unique_ptr<ParamStore> param_store_;  // --offload-params; params_ is then empty
  std::vector<std::unique_ptr<optim::Optimizer>> optimizers_;  // one per unit
  std::vector<optim::OptimizerConfig> unit_optimizers_;        // their configs
  optim::LossScaler scaler_;
  optim::LrSchedule lr_schedule_;
  std::unique_ptr<model::Workspace> workspace_;
  std::vector<std::unique_ptr<model::Workspace>> more_workspaces_;  // add_workspace()
  StageLink link_;
  // Which ops' weight parts wait, when each unit's gradient opens and
  // closes, and which gradients live in compute_params_.
  GradSchedule grad_schedule_;

  LedgerBuffer<float> compute_params_;  // fp32 copy of the current unit (low precision)
  // bf16 units go to the ops as they are (bf16 products, a family that reads
  // them in place: model::Model::reads_bf16_weights); the compute copy then
  // holds only the few values an op widens, and the gradients.
  bool bf16_in_place_ = false;
  BufferPool step_buffers_;                          // the buckets category: scratch gradients, buckets
  std::vector<OpenGradient> grad_scratch_;           // per unit, fp32, while its backward is open
  bool grads_in_place_ = false;                      // backward_writes_grads: no scratch, no bucket copy
  std::vector<std::shared_ptr<Gathered>> gathered_;  // per op, stage 3
  // The forward's last op's parameters, kept for the backward's first op.
  struct Held {
    int op = -1;
    OpParams params;
  } held_;
  // Stage 3: where gathered units go (allocated at the first gather, the
  // plan's two largest units), and which gathers forward keeps for the
  // unit's next forward op (core/gather_schedule.h).
  LedgerBuffer<std::byte> gather_buffer_;
  GatherRegion gather_region_{0};
  GatherSchedule gather_schedule_;
  LedgerBuffer<std::byte> quant_scratch_;  // the compressed collectives' scratch ("comm")
  LedgerBuffer<float> norm_scratch_;       // the gradient norm's heads and block (zero/grad_norm.h, "comm")
  // Per unit: where its tensors start (unit-relative, ascending), so that no
  // quantization block holds elements of two tensors (comm/quantize.h).
  std::vector<std::vector<uint64_t>> unit_tensor_starts_;
  // Adafactor's statistics reduction (optim::adafactor_stats_scratch, "comm"):
  // every unit's sums of one round, stage 0's ranks' partials of one unit,
  // and one partial's double accumulators.
  LedgerBuffer<float> stats_sums_, stats_parts_;
  LedgerBuffer<double> stats_acc_;
  std::vector<CommWorker::Ticket> staging_tickets_;   // per unit: its last reduction
  std::deque<CommWorker::Ticket> in_flight_;          // gradient reductions not yet waited for
  struct Bucket {                                     // stage 0: gradients awaiting all-reduce
    BufferPool::Handle data;                          // empty in place: the bucket is grads_' range
    size_t capacity = 0, filled = 0, lo = 0, hi = 0;  // holds flat elements [lo, hi); capacity 0: none open
  };
  Bucket bucket_;
  // state_views()' fp32 copies of state kept in another form (Adafactor's
  // statistics, Lion's bf16 momentum), read back by state_loaded().
  struct ConvertedView {
    size_t unit = 0;
    optim::StateKind kind = optim::StateKind::kExpAvg;
    std::span<float> data;  // in converted_scratch_, or offloaded in offload_converted_
  };
  std::vector<ConvertedView> packed_views_;
  std::vector<LedgerBuffer<float>> converted_scratch_;  // booked as scratch while the views live
  // Offloaded: one unit's converted views at a time, the largest unit's size.
  LedgerBuffer<float> offload_converted_;
  void fill_converted(ConvertedView& v);
  void take_converted(const ConvertedView& v);
  // Unit u's views (master, then the optimizer's states, reachable now);
  // `converted` gives a converted view's fp32 buffer of `count` values.
  void add_unit_views(size_t u, std::span<float> master, const std::function<std::span<float>(size_t count)>& converted,
                      std::vector<StateView>& views);
  // --offload-optimizer: views into the store's first staging buffer and
  // offload_converted_, reachable between open_unit_views and
  // close_unit_views (engine_offload.cc).
  std::vector<StateView> offloaded_state_views();
  std::unique_ptr<CommWorker> worker_;
  int64_t steps_ = 0;
  int64_t step_masked_targets_ = 0;  // last_step_masked_targets()
};

}  // namespace zerodp::zero
