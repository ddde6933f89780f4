// SPDX-License-Identifier: Apache-2.0
#include "zero/engine.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "comm/reduce.h"
#include "core/convert.h"
#include "core/counter_hash.h"
#include "core/error.h"
#include "kernels/compute.h"
#include "optim/adafactor.h"
#include "optim/grad_utils.h"
#include "zero/grad_accumulate.h"
#include "zero/grad_norm.h"

namespace zerodp::zero {
namespace {

// Sum of squares and the non-finite flag of a typed gradient slice.
double sum_of_squares(comm::ConstBuffer g) {
  switch (g.dtype.kind()) {
    case Dtype::Kind::kFp32:
      return optim::sum_of_squares({static_cast<const float*>(g.data), g.count});
    case Dtype::Kind::kFp16:
      return optim::sum_of_squares({static_cast<const Half*>(g.data), g.count});
    case Dtype::Kind::kBf16:
      return optim::sum_of_squares({static_cast<const BFloat16*>(g.data), g.count});
  }
  return 0.0;
}

optim::Optimizer::BlockEndMaxima block_end_maxima(optim::Optimizer& opt, comm::ConstBuffer g, float coef) {
  switch (g.dtype.kind()) {
    case Dtype::Kind::kFp32:
      return opt.block_end_maxima({static_cast<const float*>(g.data), g.count}, coef);
    case Dtype::Kind::kFp16:
      return opt.block_end_maxima({static_cast<const Half*>(g.data), g.count}, coef);
    case Dtype::Kind::kBf16:
      return opt.block_end_maxima({static_cast<const BFloat16*>(g.data), g.count}, coef);
  }
  return {};
}

void tensor_stats(optim::Optimizer& opt, int round, std::span<const float> master, comm::ConstBuffer g, float coef,
                  optim::ElementRange part, std::span<float> out, std::span<double> acc) {
  switch (g.dtype.kind()) {
    case Dtype::Kind::kFp32:
      return opt.tensor_stats(round, master, {static_cast<const float*>(g.data), g.count}, coef, part, out, acc);
    case Dtype::Kind::kFp16:
      return opt.tensor_stats(round, master, {static_cast<const Half*>(g.data), g.count}, coef, part, out, acc);
    case Dtype::Kind::kBf16:
      return opt.tensor_stats(round, master, {static_cast<const BFloat16*>(g.data), g.count}, coef, part, out, acc);
  }
}

// The model's tensors inside unit [offset, offset + count), unit-relative.
std::vector<optim::TensorShape> unit_tensors(const std::vector<model::TensorInfo>& tensors, size_t offset,
                                             size_t count) {
  std::vector<optim::TensorShape> out;
  for (const model::TensorInfo& t : tensors) {
    if (t.offset >= offset && t.offset < offset + count) out.push_back(optim::tensor_shape(t.offset - offset, t.shape));
  }
  return out;
}

void optimizer_step(optim::Optimizer& opt, std::span<float> master, comm::ConstBuffer g, double lr, float coef) {
  switch (g.dtype.kind()) {
    case Dtype::Kind::kFp32:
      return opt.step(master, {static_cast<const float*>(g.data), g.count}, lr, coef);
    case Dtype::Kind::kFp16:
      return opt.step(master, {static_cast<const Half*>(g.data), g.count}, lr, coef);
    case Dtype::Kind::kBf16:
      return opt.step(master, {static_cast<const BFloat16*>(g.data), g.count}, lr, coef);
  }
}

}  // namespace

int shard_group_size(const EngineConfig& config, int ranks) {
  const int g = config.shard_group_size;
  ZDP_CHECK(g >= 0, ConfigError, "[engine] --shard-group-size {} must be at least 1 (or 0 for all ranks)", g);
  if (g == 0 || g == ranks) return ranks;
  ZDP_CHECK(g <= ranks && ranks % g == 0, ConfigError,
            "[engine] --shard-group-size {} does not divide the {} ranks; use a divisor of {} (such as the ranks "
            "of one host) or leave it out",
            g, ranks, ranks);
  ZDP_CHECK(config.stage != Stage::k0, ConfigError,
            "[engine] --shard-group-size {} needs stage 1, 2 or 3 (stage 0 partitions nothing, every rank holds "
            "everything); use --stage 1-3 or leave it out",
            g);
  return g;
}

void validate(const EngineConfig& config) {
  ZDP_CHECK(config.shard_group_size >= 0, ConfigError,
            "[engine] --shard-group-size {} must be at least 1 (or 0 for all ranks)", config.shard_group_size);
  ZDP_CHECK(config.grad_accum >= 1, ConfigError, "[engine] gradient accumulation {} must be at least 1",
            config.grad_accum);
  ZDP_CHECK(config.clip_norm >= 0.0 && std::isfinite(config.clip_norm), ConfigError,
            "[engine] gradient clipping {} must be >= 0 (0 turns it off)", config.clip_norm);
  optim::validate(config.optimizer);
  const optim::OptimizerConfig& o = config.optimizer;
  ZDP_CHECK(o.kind != optim::OptimizerKind::kAdafactor || o.adafactor.relative_step || config.lr_schedule.max_lr > 0.0,
            ConfigError,
            "[engine] Adafactor without relative steps takes the schedule's rate, so it needs a max_lr > 0; give one "
            "like 1e-3, or turn relative_step on");
  if (config.dtype == Dtype::fp16()) optim::validate(config.loss_scaler);
  const StageTraits& stage = traits(config.stage);
  ZDP_CHECK(config.quantize_weights == comm::Quantization::kNone || stage.gathers_on_acquire, ConfigError,
            "[engine] quantize_weights needs stage 3 (only stage 3 gathers parameters for compute); use stage 3 "
            "or turn it off");
  ZDP_CHECK(config.quantize_weights != comm::Quantization::kInt4, ConfigError,
            "[engine] quantize_weights is int8 only; use int8");
  ZDP_CHECK(config.quantize_grads == comm::Quantization::kNone || stage.reduce == GradReduce::kReduceScatter,
            ConfigError,
            "[engine] quantize_grads needs stage 1, 2 or 3 (stage 0 all-reduces its gradients); use stage 1-3 or "
            "turn it off");
  ZDP_CHECK(comm::quant_block_offered(config.quantize_block), ConfigError,
            "[engine] --quantize-block {} is not offered; use a power of two from {} to {}", config.quantize_block,
            comm::kMinQuantBlock, comm::kMaxQuantBlock);
  ZDP_CHECK(config.offload_params_dir.empty() || stage.partitions_params, ConfigError,
            "[engine] --offload-params needs stage 3 (only stage 3 partitions the parameters and gathers them as "
            "it goes); use --stage 3, or --offload-optimizer to move the optimizer's states");
  ZDP_CHECK(config.offload_params_dir.empty() || config.dtype.is_low_precision(), ConfigError,
            "[engine] --offload-params needs --precision bf16 or fp16 (at fp32 the parameters are the master "
            "weights, which --offload-optimizer moves); use bf16, or --offload-optimizer");
  ZDP_CHECK(config.quantize_delay >= 0, ConfigError,
            "[engine] quantize_delay {} must be >= 0 (0: quantize from the first step)", config.quantize_delay);
}

// Stage 3: one unit's parameters, all-gathered (on the comm thread) into
// its range of the gather region (core/gather_schedule.h).
struct Engine::Gathered {
  std::byte* data = nullptr;
  uint64_t offset = 0;  // in the region, elements
  size_t unit = 0;
  CommWorker::Ticket ticket = 0;
};

// Hybrid sharding: this rank's shard group (G consecutive ranks) and its
// replica group (the N/G ranks at the same position of every group). Both
// are split off every rank's communicator in the same order; none for the
// flat layout.
Engine::Groups Engine::make_groups(comm::Communicator& comm, const EngineConfig& config) {
  const int g = zero::shard_group_size(config, comm.size());
  if (g == comm.size()) return {};
  Groups groups;
  groups.shard = comm.split(comm.rank() / g);
  groups.replica = comm.split(comm.rank() % g);
  return groups;
}

Engine::Engine(const model::Model& model, comm::Communicator& comm, const EngineConfig& config, uint64_t seed,
               int micro_batch, int seq_len, bool checkpointing)
    : model_(model),
      comm_(comm),
      config_(config),
      groups_(make_groups(comm, config)),
      shard_comm_(groups_.shard ? *groups_.shard : comm),
      plan_([&] {
        std::vector<size_t> counts;
        for (const auto& u : model.units()) counts.push_back(u.count);
        return PartitionPlan(counts, shard_comm_.size());
      }()),
      rank_(shard_comm_.rank()),
      scaler_(config.dtype == Dtype::fp16()
                  ? config.loss_scaler
                  : optim::LossScalerConfig{.mode = optim::LossScaleMode::kStatic, .initial_scale = 1.0}),
      lr_schedule_(config.lr_schedule),
      step_buffers_(ledger_, MemoryCategory::kBuckets) {
  validate(config_);
  const StageTraits& stage = traits(config_.stage);
  const Dtype dt = config_.dtype;
  const bool mixed = dt.is_low_precision();
  auto layout = [](bool partitioned) { return partitioned ? Layout::kOwned : Layout::kFlat; };

  if (config_.offload_params_dir.empty()) {
    params_ = StateBuffer(plan_, rank_, layout(stage.partitions_params), dt, ledger_, MemoryCategory::kParams);
  } else {
    std::vector<size_t> shard_bytes;
    for (size_t u = 0; u < plan_.num_units(); ++u) shard_bytes.push_back(plan_.shard(u, rank_).count * dt.size());
    param_store_ =
        std::make_unique<ParamStore>(config_.offload_params_dir, comm_.rank(), std::move(shard_bytes), ledger_);
  }
  const bool separate_staging = keeps_owned_accumulator(config_.stage, config_.grad_accum);
  grads_ = StateBuffer(plan_, rank_, layout(stage.partitions_grads || separate_staging), dt, ledger_,
                       MemoryCategory::kGrads);
  if (separate_staging) grad_staging_ = StateBuffer(plan_, rank_, Layout::kFlat, dt, ledger_, MemoryCategory::kGrads);
  for (int p = 0; p < pairwise_partials(config_.grad_accum); ++p) {
    grad_partials_.emplace_back(plan_, rank_, layout(stage.partitions_grads || separate_staging), dt, ledger_,
                                MemoryCategory::kGrads);
  }
  const bool offload = !config_.offload_optimizer_dir.empty();
  if (mixed) {
    if (!offload) {
      master_ = StateBuffer(plan_, rank_, layout(stage.partitions_optimizer), Dtype::fp32(), ledger_,
                            MemoryCategory::kMaster);
    }
    bf16_in_place_ =
        config_.dtype == Dtype::bf16() && config_.compute == kernels::Compute::kBf16 && model_.reads_bf16_weights();
    // The largest unit, converted there; or, read in place, what the ops
    // widen and the gradients that live there (core/grad_schedule.h).
    compute_params_ = LedgerBuffer<float>(ledger_, MemoryCategory::kGathered,
                                          compute_copy_elements(model::grad_ops(model_, bf16_in_place_)));
  }

  // The compressed collectives' one scratch buffer (comm/quantize.h): they
  // run one at a time, on the comm thread or inline.
  const std::vector<model::TensorInfo> tensors = model_.tensors();
  std::vector<std::vector<optim::TensorShape>> shapes;  // each unit's tensors, unit-relative
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    shapes.push_back(unit_tensors(tensors, plan_.unit_offset(u), plan_.unit_count(u)));
    unit_tensor_starts_.push_back(optim::tensor_starts(shapes.back()));
  }
  const uint64_t quant_scratch = comm::max_quantized_scratch(
      unit_counts(), shard_comm_.size(), rank_, weights_format(config_), grads_format(config_), unit_tensor_starts_);
  if (quant_scratch > 0) quant_scratch_ = LedgerBuffer<std::byte>(ledger_, MemoryCategory::kComm, quant_scratch);
  norm_scratch_ = LedgerBuffer<float>(ledger_, MemoryCategory::kComm,
                                      optim::norm_scratch_floats(plan_.num_units(), shard_comm_.size()));

  const ParamSource seeded = [this, seed, &tensors](size_t first, std::span<float> out) {
    model_.init_range(tensors, out, first, seed);
  };
  if (offload) {
    make_offload_store(shapes, seeded);
  } else {
    // Before the optimizers exist: plan/engine_memory.h's fill() moment
    // counts on this order.
    fill_params(seeded);
    make_optimizers(shapes, /*external_states=*/false);
  }
  if (!optimizers_.empty() && optimizers_.front()->tensor_stats_size(0) > 0) {
    const optim::AdafactorStatsScratch scratch =
        optim::adafactor_stats_scratch(shapes, plan_.num_units(), shard_comm_.size(), stage.partitions_optimizer);
    stats_sums_ = LedgerBuffer<float>(ledger_, MemoryCategory::kComm, scratch.sums);
    if (scratch.parts > 0) stats_parts_ = LedgerBuffer<float>(ledger_, MemoryCategory::kComm, scratch.parts);
    stats_acc_ = LedgerBuffer<double>(ledger_, MemoryCategory::kComm, scratch.acc);
  }

  // bf16 products round what they read to bf16 anyway: the activations
  // only they read are kept so, at half the bytes and the same bits.
  workspace_ = model_.make_workspace_for({.micro_batch = micro_batch,
                                          .seq_len = seq_len,
                                          .checkpointing = checkpointing,
                                          .bf16_product_inputs = config_.compute == kernels::Compute::kBf16});
  ledger_.allocate(MemoryCategory::kActivations, workspace_->total_bytes());
  grad_scratch_.resize(plan_.num_units());
  grads_in_place_ = backward_writes_grads(config_.stage, mixed, config_.grad_accum);
  grad_schedule_ = grad_schedule(model::grad_ops(model_, bf16_in_place_), compute_params_.size());
  staging_tickets_.assign(plan_.num_units(), 0);
  gathered_.resize(model_.ops().size());
  if (traits(config_.stage).gathers_on_acquire) {
    GatherOps ops;
    for (size_t u = 0; u < plan_.num_units(); ++u) ops.counts.push_back(plan_.unit_count(u));
    for (const model::Op& op : model_.ops()) {
      ops.units.push_back(op.unit);
      ops.backward_reads.push_back(op.backward_reads_params);
    }
    gather_schedule_ = gather_schedule(ops, config_.prefetch);
    gather_region_ = GatherRegion(gather_schedule_.region_elements);
  }
  if (config_.overlap) worker_ = std::make_unique<CommWorker>();
}

void Engine::make_optimizers(const std::vector<std::vector<optim::TensorShape>>& shapes, bool external_states) {
  // 8-bit Adam keeps some units' moments in fp32 (optim::unit_optimizer_config):
  // the unit the token embedding reads (GPT's, tied to the LM head).
  std::vector<bool> embedding(plan_.num_units(), false);
  for (const model::Op& op : model_.ops()) {
    if (op.token_embedding) embedding[static_cast<size_t>(op.unit)] = true;
  }
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    optim::ShardOptions options;
    options.accountant = optimizer_state_accountant(ledger_);
    options.unit_offset = update_range(u).offset;
    options.unit_flat_offset = plan_.unit_offset(u);
    options.tensors = shapes[u];
    options.external_states = external_states;
    unit_optimizers_.push_back(optim::unit_optimizer_config(config_.optimizer, plan_.unit_count(u), embedding[u]));
    optimizers_.push_back(optim::make_optimizer(unit_optimizers_.back(), update_range(u).count, std::move(options)));
  }
}

// Each rank asks the source for exactly the elements its stage holds (the
// whole unit at stages 0-2, its shard at 3), through one small fp32 chunk:
// the parameters are rounded from it, and the master weights (the elements
// this rank updates, a part of those it holds) copied. The rounding is the
// one refresh_params does, so no collective is needed.
void Engine::fill_params(const ParamSource& source, bool fresh_states) {
  constexpr size_t kChunkElements = size_t{1} << 16;  // 256 KiB
  LedgerBuffer<float> chunk(ledger_, MemoryCategory::kScratch, std::min(kChunkElements, plan_.largest_unit()));
  if (offload_) {
    // A new file is filled (master and starting states); later, the
    // optimizer's states are left as they are.
    visit_states(fresh_states ? OffloadStore::Pass::kFill : OffloadStore::Pass::kUpdate,
                 [&](size_t u, std::span<float> master) {
                   fill_unit(u, source, chunk.span(), config_.dtype.is_low_precision() ? master : std::span<float>());
                   if (fresh_states) optimizers_[u]->reset_states();
                 });
    return;
  }
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    fill_unit(u, source, chunk.span(), master_.allocated() ? master_.floats(u, update_range(u)) : std::span<float>());
  }
}

void Engine::fill_unit(size_t u, const ParamSource& source, std::span<float> chunk, std::span<float> master) {
  const comm::ShardRange held =
      traits(config_.stage).partitions_params ? plan_.shard(u, rank_) : comm::ShardRange{0, plan_.unit_count(u)};
  const comm::ShardRange upd = update_range(u);
  for (size_t at = held.offset; at < held.offset + held.count; at += chunk.size()) {
    const size_t n = std::min(chunk.size(), held.offset + held.count - at);
    source(plan_.unit_offset(u) + at, chunk.first(n));
    convert_into(param_slice(u, {at, n}), comm::ConstBuffer(chunk.data(), n, Dtype::fp32()));
    const size_t lo = std::max(at, upd.offset), hi = std::min(at + n, upd.offset + upd.count);
    if (!master.empty() && lo < hi) std::copy_n(chunk.data() + (lo - at), hi - lo, master.data() + (lo - upd.offset));
  }
  params_written(u);
}

comm::Buffer Engine::param_slice(size_t u, comm::ShardRange range) {
  if (!param_store_) return params_.slice(u, range);
  const comm::ShardRange own = plan_.shard(u, rank_);
  ZDP_CHECK(range.offset >= own.offset && range.offset + range.count <= own.offset + own.count, Error,
            "[engine] unit {}'s elements [{}, {}) are not this rank's shard", u, range.offset,
            range.offset + range.count);
  const comm::Buffer shard(param_store_->staging(u).data(), own.count, config_.dtype);
  return shard.slice(range.offset - own.offset, range.count);
}

void Engine::params_written(size_t u) {
  if (param_store_) param_store_->write(u);
}

comm::ConstBuffer Engine::own_params(size_t u) {
  if (!param_store_) return params_.own_shard(u);
  param_store_->read(u);
  return comm::ConstBuffer(param_store_->staging(u).data(), plan_.shard(u, rank_).count, config_.dtype);
}

Engine::~Engine() {
  if (worker_) {
    try {
      worker_->drain();
    } catch (...) {  // already reported by whoever waited
    }
  }
  worker_.reset();
  gathered_.clear();
  gather_buffer_.reset();
  grad_scratch_.clear();
  if (workspace_) ledger_.release(MemoryCategory::kActivations, workspace_->total_bytes());
}

std::vector<uint64_t> Engine::unit_counts() const {
  std::vector<uint64_t> counts;
  for (size_t u = 0; u < plan_.num_units(); ++u) counts.push_back(plan_.unit_count(u));
  return counts;
}

comm::ShardRange Engine::update_range(size_t unit) const {
  return traits(config_.stage).partitions_optimizer ? plan_.shard(unit, rank_)
                                                    : comm::ShardRange{0, plan_.unit_count(unit)};
}

CommWorker::Ticket Engine::submit(std::function<void()> task) {
  if (worker_) return worker_->submit(std::move(task));
  task();
  return 0;
}

void Engine::wait(CommWorker::Ticket ticket) {
  if (worker_ && ticket != 0) worker_->wait(ticket);
}

void Engine::drain() {
  if (worker_) worker_->drain();
  in_flight_.clear();
}

// A reduction holds its input buffer until the comm thread has run it; at
// most kMaxReductionsInFlight may wait, so a lagging comm thread cannot pile
// up gradient buffers past what the plan counts (plan/engine_memory.h).
void Engine::limit_in_flight(CommWorker::Ticket ticket) {
  if (!worker_) return;
  in_flight_.push_back(ticket);
  while (in_flight_.size() > kMaxReductionsInFlight) {
    wait(in_flight_.front());
    in_flight_.pop_front();
  }
}

// ---- the unit schedule ----

// The stochastic rounding's key for one compressed collective (unused with
// nearest rounding): the optimizer steps taken, the unit, the micro-batch
// and which collective. A unit's forward and backward gathers in one step
// draw the same (they see the same weights), every call of another step
// draws afresh, and a resumed run draws what the unbroken run drew.
uint64_t Engine::rounding_key(size_t unit, int micro, bool grads) const {
  const uint64_t at = mix64(static_cast<uint64_t>(steps_) * kGoldenGamma + (grads ? 2 : 1));
  return mix64(at ^ mix64((unit + 1) * kGoldenGamma + static_cast<uint64_t>(micro) * 0xD1B54A32D192ED03ull));
}

// --quantize-delay: read when a collective is submitted, so the comm thread
// gets this step's format and never reads steps_ as apply_step moves it.
comm::QuantFormat Engine::format_now(comm::QuantFormat format) const {
  if (steps_ < config_.quantize_delay) format.codes = comm::Quantization::kNone;
  return format;
}

std::shared_ptr<Engine::Gathered> Engine::start_gather(int op_index) {
  auto g = std::make_shared<Gathered>();
  g->unit = static_cast<size_t>(model_.ops()[op_index].unit);
  if (gather_buffer_.empty()) {
    gather_buffer_ =
        LedgerBuffer<std::byte>(ledger_, MemoryCategory::kGathered, gather_region_.capacity() * config_.dtype.size());
  }
  const auto offset = gather_region_.allocate(plan_.unit_count(g->unit));
  // gather_schedule() replayed this very order of gathers and releases.
  ZDP_CHECK(offset.has_value(), Error, "[engine] op {}'s gather does not fit the gather region of {} elements",
            op_index, gather_region_.capacity());
  g->offset = *offset;
  g->data = gather_buffer_.data() + *offset * config_.dtype.size();
  const comm::Buffer out(g->data, plan_.unit_count(g->unit), config_.dtype);
  // With --offload-params the shard is read here, on the comm thread, so
  // the disk's time hides behind the compute the gather does.
  const comm::QuantFormat format = format_now(weights_format(config_));
  if (format.codes != comm::Quantization::kNone) {
    g->ticket = submit([this, out, format, unit = g->unit, key = rounding_key(g->unit, 0, /*grads=*/false)] {
      shard_comm_.all_gather_quantized(own_params(unit), out, format, quant_scratch_.span(), unit_tensor_starts_[unit],
                                       key);
    });
    return g;
  }
  g->ticket = submit([this, out, unit = g->unit] { shard_comm_.all_gather(own_params(unit), out); });
  return g;
}

int Engine::pass_to(int op_index) const {
  const auto& to = gather_schedule_.pass_to;
  return static_cast<size_t>(op_index) < to.size() ? to[static_cast<size_t>(op_index)] : -1;
}

bool Engine::reads_params(int op_index, int direction) const {
  return direction > 0 || model_.ops()[static_cast<size_t>(op_index)].backward_reads_params;
}

Engine::OpParams Engine::acquire(int op_index, int direction) {
  if (direction < 0 && held_.op == op_index) {
    // The forward's last op, again as the backward's first: its parameters
    // (gathered, or converted into compute_params_) are still there.
    held_.op = -1;
    prefetch(op_index + direction, direction);
    return held_.params;
  }
  const size_t unit = static_cast<size_t>(model_.ops()[op_index].unit);
  const size_t count = plan_.unit_count(unit);
  comm::ConstBuffer source;
  if (traits(config_.stage).gathers_on_acquire) {
    auto& g = gathered_[op_index];
    if (!g) g = start_gather(op_index);
    prefetch(op_index + direction, direction);
    wait(g->ticket);
    source = comm::ConstBuffer(g->data, count, config_.dtype);
  } else {
    source = params_.unit(unit);
  }
  if (!config_.dtype.is_low_precision()) return {.fp32 = {static_cast<const float*>(source.data), count}};
  if (bf16_in_place_) {
    return {.bf16 = {static_cast<const BFloat16*>(source.data), count},
            .widened = compute_params_.span().first(model_.ops()[op_index].bf16_widened)};
  }
  convert(source.data, source.dtype, compute_params_.data(), Dtype::fp32(), count);
  return {.fp32 = {compute_params_.data(), count}};
}

void Engine::run_forward(int op_index, const OpParams& params, model::Workspace& ws) {
  if (!params.bf16.empty()) return model_.forward_bf16(op_index, params.bf16, params.widened, ws);
  model_.forward(op_index, params.fp32, ws);
}

void Engine::run_backward(int op_index, const OpParams& params, std::span<float> grad, model::Workspace& ws) {
  if (!params.bf16.empty()) return model_.backward_bf16(op_index, params.bf16, params.widened, grad, ws);
  model_.backward(op_index, params.fp32, grad, ws);
}

void Engine::run_backward_input(int op_index, const OpParams& params, model::Workspace& ws) {
  if (!params.bf16.empty()) return model_.backward_input_bf16(op_index, params.bf16, params.widened, ws);
  model_.backward_input(op_index, params.fp32, ws);
}

void Engine::prefetch(int op_index, int direction) {
  if (!traits(config_.stage).gathers_on_acquire || !config_.prefetch) return;
  if (op_index < 0 || op_index >= static_cast<int>(gathered_.size()) || gathered_[op_index]) return;
  if (reads_params(op_index, direction)) gathered_[op_index] = start_gather(op_index);
}

void Engine::release(int op_index) {
  auto& g = gathered_[op_index];
  if (!g) return;
  wait(g->ticket);  // its range may be the next gather's
  gather_region_.free(g->offset);
  g.reset();
}

void Engine::forward_pass(model::Workspace& ws, bool then_backward) {
  const kernels::ScopedCompute compute(config_.compute);
  const auto& ops = model_.ops();
  const int last = static_cast<int>(ops.size()) - 1;
  // What a step that threw left: a held op or prefetched gathers.
  held_ = {};
  for (int i = 0; i <= last; ++i) release(i);
  for (int i = 0; i <= last; ++i) {
    const OpParams params = acquire(i, +1);
    run_forward(i, params, ws);
    if (pass_to(i) >= 0) {
      // Stage 3: the unit's next forward op (tied weights) takes this gather.
      gathered_[pass_to(i)] = std::move(gathered_[i]);
      continue;
    }
    // Backward starts with the same op: keep what it needs instead of
    // gathering (stage 3) or converting (fp16/bf16) it again.
    if (i == last && then_backward && reads_params(i, -1)) {
      held_ = {i, params};
      continue;
    }
    release(i);
  }
}

void Engine::backward_pass(model::Workspace& ws, int micro) {
  const kernels::ScopedCompute compute(config_.compute);
  const auto& ops = model_.ops();
  for (int i = static_cast<int>(ops.size()) - 1; i >= 0; --i) {
    const size_t unit = static_cast<size_t>(ops[i].unit);
    const bool reads = reads_params(i, -1);
    if (grad_schedule_.deferred[static_cast<size_t>(i)] || grad_schedule_.chunk_rows[unit] > 0) {
      // The input part now; the weight part when the unit's gradient opens,
      // or, made in rows, at its closing op, this one.
      run_backward_input(i, reads ? acquire(i, -1) : OpParams{}, ws);
      if (reads) release(i);
      if (grad_schedule_.closes_at[unit] == i && !grad_schedule_.deferred[static_cast<size_t>(i)]) {
        reduce_in_rows(unit, micro, ws);
      }
      continue;
    }
    const std::span<float> grad = open_gradient(i, micro, ws);
    const OpParams params = reads ? acquire(i, -1) : OpParams{};
    run_backward(i, params, grad, ws);
    if (reads) release(i);
    if (grad_schedule_.closes_at[unit] != i) continue;
    if (borrowed(unit)) {
      // Another stage reduces it: hand it over and close it here.
      link_.export_gradient(unit, micro, grad);
      grad_scratch_[unit].reset();
      continue;
    }
    reduce_unit(unit, micro);
  }
  flush_bucket(micro);
}

std::span<float> Engine::open_gradient(int op_index, int micro, model::Workspace& ws) {
  const auto unit = static_cast<size_t>(model_.ops()[op_index].unit);
  const size_t count = plan_.unit_count(unit);
  if (grad_schedule_.opens_at[unit] != op_index) {
    return grads_in_place_ ? std::span<float>{static_cast<float*>(grads_.unit(unit).data), count}
                           : grad_scratch_[unit].data;
  }
  std::span<float> grad;
  if (grads_in_place_) {
    // Zeroed by the unit's opening op (the last step's reduction of this
    // range has drained, and the optimizer has read it).
    grad = {static_cast<float*>(grads_.unit(unit).data), count};
    if (!(link_.seed_gradient && link_.seed_gradient(unit, micro, grad))) std::fill_n(grad.data(), count, 0.0f);
  } else {
    OpenGradient& scratch = grad_scratch_[unit];
    const uint64_t at = grad_schedule_.in_compute_copy[unit];
    if (at == GradSchedule::kPooled) {
      scratch.pooled = step_buffers_.take(count * sizeof(float), BufferPool::Fill::kZero);
      scratch.data = {pooled_data<float>(scratch.pooled), count};
    } else {
      scratch.data = std::span<float>(compute_params_.data() + at, count);
      std::fill_n(scratch.data.data(), count, 0.0f);
    }
    if (link_.seed_gradient) link_.seed_gradient(unit, micro, scratch.data);
    grad = scratch.data;
  }
  // The weight parts that waited for it, in backward order: every
  // contribution lands in the order an unsplit backward adds it.
  for (const int k : grad_schedule_.waiting[unit]) model_.backward_weights(k, grad, ws);
  return grad;
}

// Stage 0: gradients of adjacent units (backward completes them in falling
// flat order) are packed into one bucket and all-reduced together once it
// holds bucket_elements, like DDP's buckets. The sum is element-wise, so the
// bucket size never changes the bits.
void Engine::open_bucket_for(size_t unit, int micro) {
  const size_t count = plan_.unit_count(unit);
  const size_t start = plan_.unit_offset(unit);
  if (bucket_.capacity != 0 && (start + count != bucket_.lo || bucket_.filled + count > bucket_.capacity)) {
    flush_bucket(micro);
  }
  if (bucket_.capacity == 0) {
    // The bucket fills downwards from this unit's end, so it never needs
    // more than the flat elements below that point.
    bucket_.capacity = std::min(std::max(config_.bucket_elements, count), start + count);
    bucket_.filled = 0;
    bucket_.hi = start + count;
  }
}

comm::Buffer Engine::bucket_slot(size_t unit, int micro) {
  open_bucket_for(unit, micro);
  if (micro == 0) return grads_.unit(unit);
  if (!bucket_.data) {
    bucket_.data = step_buffers_.take(bucket_.capacity * config_.dtype.size(), BufferPool::Fill::kUndefined);
  }
  const size_t count = plan_.unit_count(unit);
  const comm::Buffer all(bucket_.data->data(), bucket_.capacity, config_.dtype);
  return all.slice(bucket_.capacity - bucket_.filled - count, count);
}

void Engine::bucket_filled(size_t unit, int micro) {
  bucket_.filled += plan_.unit_count(unit);
  bucket_.lo = plan_.unit_offset(unit);
  // The first micro-batch's (in place) goes when full, as bucket_unit's.
  if (micro == 0 && bucket_.filled == bucket_.capacity) flush_bucket(micro);
}

void Engine::bucket_unit(size_t unit, OpenGradient scratch, int micro) {
  const size_t count = plan_.unit_count(unit);
  const size_t start = plan_.unit_offset(unit);
  open_bucket_for(unit, micro);
  if (scratch && micro == 0) {
    // The first micro-batch's bucket is grads_' own range, as in place: the
    // gradient (rounded to the training dtype) goes straight there and is
    // all-reduced in place, so no bucket buffer is pooled; later
    // micro-batches' buckets are added to it. The sum is element-wise: the
    // same bits either way.
    convert_into(grads_.unit(unit), comm::ConstBuffer(scratch.data.data(), count, Dtype::fp32()));
    scratch.reset();
  }
  if (!scratch) {
    // In place: the gradient is in grads_, the bucket is the range it
    // covers; a full one goes at once.
    bucket_.filled += count;
    bucket_.lo = start;
    if (bucket_.filled == bucket_.capacity) flush_bucket(micro);
    return;
  }
  const comm::ConstBuffer local(scratch.data.data(), count, Dtype::fp32());
  if (!bucket_.data) {
    if (bucket_.capacity == count && config_.dtype == Dtype::fp32()) {
      // A bucket that this unit fills alone (a large unit, or the lowest,
      // such as GPT's embedding): at fp32 its gradient is the bucket, with
      // no copy and no second buffer of its size (pooled: fp32 has no
      // compute copy).
      bucket_.data = std::move(scratch.pooled);
      bucket_.filled = count;
      bucket_.lo = start;
      return flush_bucket(micro);
    }
    bucket_.data = step_buffers_.take(bucket_.capacity * config_.dtype.size(), BufferPool::Fill::kUndefined);
  }
  // Filled from the end: the used part [capacity - filled, capacity) is the
  // flat range [lo, hi).
  bucket_.filled += count;
  bucket_.lo = start;
  const comm::Buffer all(bucket_.data->data(), bucket_.capacity, config_.dtype);
  convert_into(all.slice(bucket_.capacity - bucket_.filled, count), local);
}

void Engine::flush_bucket(int micro) {
  if (bucket_.capacity == 0) return;
  const size_t lo = bucket_.lo, len = bucket_.hi - bucket_.lo;
  const comm::Buffer acc = grads_.all().slice(lo, len);
  if (!bucket_.data) {  // in place (the first micro-batch, or the only one at fp32)
    bucket_ = Bucket{};
    limit_in_flight(submit([this, acc] { comm_.all_reduce(acc, acc, comm::ReduceOp::kSum); }));
    return;
  }
  const comm::Buffer all(bucket_.data->data(), bucket_.capacity, config_.dtype);
  const comm::Buffer staging = all.slice(bucket_.capacity - bucket_.filled, bucket_.filled);
  BufferPool::Handle keep = std::move(bucket_.data);
  bucket_ = Bucket{};
  // A later micro-batch's bucket (the first's is in place): reduced, then
  // added to the earlier micro-batches' sum.
  limit_in_flight(submit([this, staging, acc, micro, keep, lo, len] {
    comm_.all_reduce(staging, staging, comm::ReduceOp::kSum);
    add_pairwise(staging, micro, config_.grad_accum,
                 [&](int p) { return p == 0 ? acc : grad_partials_[p - 1].all().slice(lo, len); });
  }));
}

// The unit's fp32 gradient is complete: reduce it across ranks (on the comm
// thread) and add it into the accumulator.
void Engine::reduce_unit(size_t unit, int micro) {
  OpenGradient scratch = std::exchange(grad_scratch_[unit], {});
  const StageTraits& stage = traits(config_.stage);
  if (stage.reduce == GradReduce::kAllReduce) return bucket_unit(unit, std::move(scratch), micro);
  const size_t count = plan_.unit_count(unit);
  BufferPool::Handle bucket;
  comm::Buffer staging;
  if (!stage.partitions_grads || config_.dtype.is_low_precision()) {
    // Stage 1's full local gradient (in place, the backward wrote it
    // there), or the gradient rounded to the training dtype.
    staging = reduction_input(unit, bucket);
    if (scratch) convert_into(staging, comm::ConstBuffer(scratch.data.data(), count, Dtype::fp32()));
    scratch.reset();
  } else {
    // fp32: the gradient itself is the reduction's input, kept alive by the
    // comm thread's copy of its handle (pooled: fp32 has no compute copy).
    staging = comm::Buffer(scratch.data.data(), count, Dtype::fp32());
  }
  submit_reduce_scatter(unit, micro, staging, std::move(bucket), std::move(scratch.pooled));
}

comm::Buffer Engine::reduction_input(size_t unit, BufferPool::Handle& bucket) {
  if (!traits(config_.stage).partitions_grads) {
    // Stage 1 keeps the full local gradient (the paper's 2Φ): reduce-scatter
    // from it, once the previous micro-batch's reduction of it has run.
    wait(staging_tickets_[unit]);
    return (grad_staging_.allocated() ? grad_staging_ : grads_).unit(unit);
  }
  const size_t count = plan_.unit_count(unit);
  bucket = step_buffers_.take(count * config_.dtype.size(), BufferPool::Fill::kUndefined);
  return {bucket->data(), count, config_.dtype};
}

// A unit made in rows: each batch of rows starts from zero, takes every op's
// weight part for those rows in backward order (the order the whole
// gradient adds them in), and is rounded into the reduction's input: the
// bits of the whole gradient, whose fp32 copy is never made.
void Engine::reduce_in_rows(size_t unit, int micro, model::Workspace& ws) {
  const bool all_reduce = traits(config_.stage).reduce == GradReduce::kAllReduce;
  BufferPool::Handle bucket;
  const comm::Buffer staging = all_reduce ? bucket_slot(unit, micro) : reduction_input(unit, bucket);
  const size_t row = model_.units()[unit].grad_row;
  const size_t rows = plan_.unit_count(unit) / row;
  const size_t batch = grad_schedule_.chunk_rows[unit];
  for (size_t first = 0; first < rows; first += batch) {
    const std::span<float> chunk = compute_params_.span().first(std::min(batch, rows - first) * row);
    std::fill(chunk.begin(), chunk.end(), 0.0f);
    for (const int k : grad_schedule_.waiting[unit]) model_.backward_weights_rows(k, first, chunk, ws);
    convert_into(staging.slice(first * row, chunk.size()),
                 comm::ConstBuffer(chunk.data(), chunk.size(), Dtype::fp32()));
  }
  if (all_reduce) return bucket_filled(unit, micro);
  submit_reduce_scatter(unit, micro, staging, std::move(bucket), {});
}

void Engine::submit_reduce_scatter(size_t unit, int micro, comm::Buffer staging, BufferPool::Handle bucket,
                                   BufferPool::Handle pooled) {
  // Stage 1 without accumulation reduce-scatters in place: its accumulator
  // is the own shard of the very buffer it stages in.
  const comm::Buffer acc = grads_.own_shard(unit);
  const comm::ShardRange own = plan_.shard(unit, rank_);
  const uint64_t key = rounding_key(unit, micro, /*grads=*/true);
  const comm::QuantFormat format = format_now(grads_format(config_));
  staging_tickets_[unit] = submit(
      [this, staging, acc, own, micro, bucket = std::move(bucket), pooled = std::move(pooled), unit, key, format] {
        // The plain reduce-scatter, or the compressed one (quantize_grads),
        // inside the shard group; with hybrid sharding the shard's sum over the
        // groups follows (an all-reduce across the replica group, in place).
        auto reduce_scatter = [this, unit, key, format](comm::ConstBuffer in, comm::Buffer out) {
          if (format.codes == comm::Quantization::kNone) {
            shard_comm_.reduce_scatter(in, out, comm::ReduceOp::kSum);
          } else {
            shard_comm_.reduce_scatter_quantized(in, out, comm::ReduceOp::kSum, format, quant_scratch_.span(),
                                                 unit_tensor_starts_[unit], key);
          }
          if (groups_.replica) groups_.replica->all_reduce(out, out, comm::ReduceOp::kSum);
        };
        if (micro == 0) return reduce_scatter(staging, acc);
        const comm::Buffer own_part = staging.slice(own.offset, own.count);
        reduce_scatter(staging, own_part);
        add_pairwise(own_part, micro, config_.grad_accum,
                     [&](int p) { return p == 0 ? acc : grad_partials_[p - 1].own_shard(unit); });
      });
  limit_in_flight(staging_tickets_[unit]);
}

void Engine::set_comm_timeout(std::chrono::milliseconds timeout) {
  comm_.set_timeout(timeout);
  if (groups_.shard) groups_.shard->set_timeout(timeout);
  if (groups_.replica) groups_.replica->set_timeout(timeout);
}

// ---- the step ----

StepResult Engine::train_step(const BatchFeeder& feed) {
  std::vector<double> losses;
  const float grad_scale = micro_grad_scale();
  step_masked_targets_ = 0;
  for (int micro = 0; micro < config_.grad_accum; ++micro) {
    feed(*workspace_, micro);
    step_masked_targets_ += workspace_->masked_targets();
    forward_pass(*workspace_, /*then_backward=*/true);
    losses.push_back(workspace_->loss());
    workspace_->set_loss_grad_scale(grad_scale);
    backward_pass(*workspace_, micro);
  }
  return apply_step(losses);
}

float Engine::micro_grad_scale() const {
  return static_cast<float>(scaler_.scale() / (static_cast<double>(comm_.size()) * config_.grad_accum));
}

void Engine::link_stage(StageLink link) {
  const StageTraits& stage = traits(config_.stage);
  ZDP_CHECK(!stage.partitions_grads && !stage.partitions_params, ConfigError,
            "[pipeline] ZeRO stage {} with pipeline stages: a pipeline accumulates each stage's gradients over its "
            "micro-batches, which partitioned gradients would reduce-scatter once per micro-batch (DeepSpeed refuses "
            "it too); use --stage 0 or 1",
            static_cast<int>(config_.stage));
  ZDP_CHECK(!offload_ && !param_store_, ConfigError,
            "[pipeline] --offload-optimizer and --offload-params are not built for pipeline stages yet: train "
            "without them");
  ZDP_CHECK(link.borrowed.empty() || link.borrowed.size() == plan_.num_units(), ShapeError,
            "[pipeline] {} borrowed flags for {} units", link.borrowed.size(), plan_.num_units());
  link_ = std::move(link);
}

void Engine::forward_micro(model::Workspace& ws) { forward_pass(ws, /*then_backward=*/false); }

void Engine::backward_micro(model::Workspace& ws, int micro) {
  ws.set_loss_grad_scale(micro_grad_scale());
  backward_pass(ws, micro);
}

StepResult Engine::finish_step(const std::vector<double>& local_losses) { return apply_step(local_losses); }

model::Workspace& Engine::add_workspace() {
  auto ws = model_.make_workspace_for({.micro_batch = workspace_->micro_batch(),
                                       .seq_len = workspace_->seq_len(),
                                       .checkpointing = workspace_->checkpointing(),
                                       .bf16_product_inputs = config_.compute == kernels::Compute::kBf16});
  ledger_.allocate(MemoryCategory::kActivations, ws->total_bytes());
  more_workspaces_.push_back(std::move(ws));
  return *more_workspaces_.back();
}

comm::Buffer Engine::unit_params(size_t unit) {
  ZDP_CHECK(!traits(config_.stage).partitions_params && params_.allocated(), ConfigError,
            "[engine] unit_params: stage {} keeps only a shard of the parameters", static_cast<int>(config_.stage));
  return params_.unit(unit);
}

double Engine::step_loss(const std::vector<double>& local_losses) {
  const size_t n = static_cast<size_t>(comm_.size());
  const size_t k = local_losses.size();
  std::vector<double> all(n * k);
  comm_.all_gather_value_bytes(std::as_bytes(std::span(local_losses)), std::as_writable_bytes(std::span(all)));
  std::vector<double> global(n * k);  // rank r's micro-batch m is global micro-batch m * N + r
  for (size_t r = 0; r < n; ++r) {
    for (size_t m = 0; m < k; ++m) global[m * n + r] = all[r * k + m];
  }
  return comm::pairwise_sum(global) / static_cast<double>(global.size());
}

double Engine::eval_loss(const BatchFeeder& feed) {
  feed(*workspace_, 0);
  forward_pass(*workspace_, /*then_backward=*/false);
  return comm_.all_reduce_scalar(workspace_->loss(), comm::ReduceOp::kAvg);
}

StepResult Engine::apply_step(const std::vector<double>& losses) {
  drain();  // the comm thread is idle from here: the collectives below are this thread's
  double loss = link_.pipeline && !link_.has_loss ? 0.0 : step_loss(losses);
  // A pipeline's loss is its last stage's: a sum with zeros is exact.
  if (link_.pipeline) loss = link_.pipeline->all_reduce_scalar(link_.has_loss ? loss : 0.0, comm::ReduceOp::kSum);
  // Overflow and norm over this rank's shards of the reduced gradient: the
  // same elements at every stage, summed in rank order. With hybrid sharding
  // over the shard group only: every group holds the same reduced shards, so
  // each element counts once.
  double local_sumsq = 0.0;
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    if (!borrowed(u)) local_sumsq += sum_of_squares(grads_.own_shard(u));
  }
  // The squares are summed in double, where no float's square and no count
  // of them overflows: the sum is finite exactly when every element is, so
  // the overflow flag needs no pass of its own.
  const bool local_nonfinite = !std::isfinite(local_sumsq);
  StepResult result;
  result.loss = loss;
  result.loss_scale = scaler_.scale();
  result.lr = lr_schedule_.lr_at(steps_);
  double nonfinite = shard_comm_.all_reduce_scalar(local_nonfinite ? 1.0 : 0.0, comm::ReduceOp::kMax);
  if (link_.pipeline) nonfinite = link_.pipeline->all_reduce_scalar(nonfinite, comm::ReduceOp::kMax);
  const bool overflow = nonfinite > 0.0;
  if (config_.dtype == Dtype::fp16()) {
    if (scaler_.update(overflow)) {
      result.skipped = true;
      result.step = steps_;
      result.grad_norm = std::nan("");
      return result;
    }
  } else {
    ZDP_CHECK(!overflow, Error,
              "[train_step] non-finite gradient at step {} ({}): lower the learning rate or enable clipping",
              steps_ + 1, config_.dtype.name());
  }
  // The norm in fixed blocks added exactly (zero/grad_norm.h): the same bits
  // at every N and stage, so a clipped step is N-invariant too.
  const double sumsq = canonical_sum_of_squares(plan_, grads_, shard_comm_, norm_scratch_.span(),
                                                {.across = link_.pipeline, .skipped = link_.borrowed});
  const optim::ClipResult clip = optim::unscale_and_clip(sumsq, result.loss_scale, config_.clip_norm);
  result.grad_norm = clip.grad_norm;
  result.clipped = clip.clipped;

  share_block_maxima(clip.coefficient);
  share_tensor_stats(clip.coefficient);
  const bool round_here = offload_ && config_.dtype.is_low_precision();
  visit_states(OffloadStore::Pass::kUpdate, [&](size_t u, std::span<float> master) {
    if (borrowed(u)) return;  // the pipeline writes its parameters
    const comm::ShardRange upd = update_range(u);
    optimizer_step(*optimizers_[u], master, grads_.slice(u, upd), result.lr, clip.coefficient);
    // Offloaded master weights are in RAM only now: refresh_params' rounding, here.
    if (round_here) round_params(u, master);
  });
  refresh_params();
  ++steps_;
  result.step = steps_;
  return result;
}

// Block-quantized optimizer state (8-bit Adam): a block's scale is the
// maximum over the whole block, and the blocks at the ends of a rank's unit
// shards may be cut by other ranks' shards. One all-gather of every rank's
// four end maxima per unit; each rank takes the maximum over the shards that
// touch its end blocks (exact: the same bits for any N). Nothing to share
// when each rank updates whole units (stage 0) or alone.
void Engine::share_block_maxima(float coefficient) {
  // Any unit's (8-bit Adam keeps some units' moments in fp32, unquantized).
  if (std::none_of(optimizers_.begin(), optimizers_.end(),
                   [](const auto& opt) { return opt->quant_block_size() > 0; })) {
    return;
  }
  if (!traits(config_.stage).partitions_optimizer || shard_comm_.size() == 1) return;
  const size_t units = plan_.num_units(), n = static_cast<size_t>(shard_comm_.size());
  std::vector<optim::Optimizer::BlockEndMaxima> local(units), all(units * n);
  visit_states(OffloadStore::Pass::kRead, [&](size_t u, std::span<float> /*master*/) {
    local[u] = block_end_maxima(*optimizers_[u], grads_.own_shard(u), coefficient);
  });
  shard_comm_.all_gather_value_bytes(std::as_bytes(std::span(local)), std::as_writable_bytes(std::span(all)));
  std::vector<optim::ElementRange> shards(n);
  std::vector<optim::Optimizer::BlockEndMaxima> partials(n);
  for (size_t u = 0; u < units; ++u) {
    for (size_t r = 0; r < n; ++r) {
      const comm::ShardRange s = plan_.shard(u, static_cast<int>(r));
      shards[r] = {s.offset, s.count};
      partials[r] = all[r * units + u];
    }
    optimizers_[u]->share_block_end_maxima(
        optim::combine_block_end_maxima(shards, partials, static_cast<size_t>(rank_)));
  }
}

// Adafactor's per-tensor statistics (optim/optimizer.h tensor_stats): two
// rounds, each one partial per plan shard, summed in rank order. At stages
// 1-3 each rank computes its own shard's partial and the fp32 all-reduce
// sums them; at stage 0 each rank holds every unit whole, computes every
// plan shard's partial itself and sums them with the all-reduce's own
// ordered reduction, so the bits are those of the other stages with no
// communication. One all-reduce of every unit's statistics per round.
void Engine::share_tensor_stats(float coefficient) {
  if (optimizers_.empty() || optimizers_.front()->tensor_stats_size(0) == 0) return;
  const size_t units = plan_.num_units(), n = static_cast<size_t>(shard_comm_.size());
  const bool partitioned = traits(config_.stage).partitions_optimizer;
  std::vector<size_t> offsets(units + 1, 0);
  std::vector<const void*> ins(partitioned ? 0 : n);
  for (int round = 0; round < 2; ++round) {
    for (size_t u = 0; u < units; ++u) offsets[u + 1] = offsets[u] + optimizers_[u]->tensor_stats_size(round);
    const std::span<float> all = stats_sums_.span().first(offsets[units]);
    visit_states(OffloadStore::Pass::kRead, [&](size_t u, std::span<float> master) {
      const comm::ShardRange upd = update_range(u);
      optim::Optimizer& opt = *optimizers_[u];
      const std::span<float> mine = all.subspan(offsets[u], offsets[u + 1] - offsets[u]);
      const comm::ConstBuffer g = grads_.slice(u, upd);
      if (partitioned) {
        tensor_stats(opt, round, master, g, coefficient, {0, upd.count}, mine, stats_acc_);
        return;
      }
      for (size_t r = 0; r < n; ++r) {
        const comm::ShardRange s = plan_.shard(u, static_cast<int>(r));
        const std::span<float> part = stats_parts_.span().subspan(r * mine.size(), mine.size());
        tensor_stats(opt, round, master, g, coefficient, {s.offset, s.count}, part, stats_acc_);
        ins[r] = part.data();
      }
      comm::reduce_ordered(ins, mine.data(), mine.size(), Dtype::fp32(), comm::ReduceOp::kSum);
    });
    if (partitioned && !all.empty()) {
      const comm::Buffer buffer(all.data(), all.size(), Dtype::fp32());
      shard_comm_.all_reduce(buffer, buffer, comm::ReduceOp::kSum);
    }
    // Round 0's statistics move the factored second moment (state); round
    // 1's set only the step's divisors.
    const auto set = [&](size_t u, std::span<float> /*master*/) {
      optimizers_[u]->set_tensor_stats(round, all.subspan(offsets[u], offsets[u + 1] - offsets[u]));
    };
    if (round == 0) {
      visit_states(OffloadStore::Pass::kUpdate, set);
    } else {
      for (size_t u = 0; u < units; ++u) set(u, {});
    }
  }
}

void Engine::round_params(size_t u, std::span<const float> master) {
  convert_into(param_slice(u, update_range(u)), comm::ConstBuffer(master.data(), master.size(), Dtype::fp32()));
  params_written(u);
}

// The low-precision parameters follow the updated master weights.
void Engine::refresh_params() {
  if (master_.allocated()) {
    for (size_t u = 0; u < plan_.num_units(); ++u) {
      if (!borrowed(u)) round_params(u, master_.floats(u, update_range(u)));
    }
  }
  if (traits(config_.stage).refresh == ParamRefresh::kAllGather) {
    for (size_t u = 0; u < plan_.num_units(); ++u) {
      if (borrowed(u)) continue;
      const comm::Buffer full = params_.unit(u);
      const comm::Buffer own = params_.own_shard(u);
      submit([this, own, full] { shard_comm_.all_gather(own, full); });
    }
  }
  drain();
}

}  // namespace zerodp::zero
