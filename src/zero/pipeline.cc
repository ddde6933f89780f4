// SPDX-License-Identifier: Apache-2.0
#include "zero/pipeline.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/error.h"

namespace zerodp::zero {
namespace {

// The ops [first, end) of each stage from the cuts.
std::pair<int, int> stage_ops(const model::Model& model, const PipelineLayout& layout, int stage) {
  const int ops = static_cast<int>(model.ops().size());
  const auto s = static_cast<size_t>(stage);
  return {stage == 0 ? 0 : layout.cuts[s - 1], stage + 1 == layout.stages ? ops : layout.cuts[s]};
}

void check_layout(const model::Model& model, comm::Communicator& world, const EngineConfig& config,
                  const PipelineLayout& layout) {
  const int p = layout.stages, n = world.size();
  ZDP_CHECK(p >= 1 && n % p == 0, ConfigError,
            "[pipeline] {} pipeline stages do not divide {} ranks: use a number of ranks that is a multiple of the "
            "stages",
            p, n);
  ZDP_CHECK(layout.cuts.size() == static_cast<size_t>(p - 1), ConfigError, "[pipeline] {} stages need {} cuts, got {}",
            p, p - 1, layout.cuts.size());
  const int ops = static_cast<int>(model.ops().size());
  for (size_t i = 0; i < layout.cuts.size(); ++i) {
    const int c = layout.cuts[i];
    const int before = i == 0 ? 0 : layout.cuts[i - 1];
    ZDP_CHECK(c > before && c < ops && model.can_cut_before(c), ConfigError,
              "[pipeline] the {} model cannot be cut before op {} (stage {}): each stage needs ops of its own, and a "
              "cut must lie where the model allows one",
              model.kind(), c, i + 1);
  }
  ZDP_CHECK(config.shard_group_size == 0 || config.shard_group_size == n / p, ConfigError,
            "[pipeline] hybrid sharding with pipeline stages is not built: train without --shard-group-size");
}

}  // namespace

Pipeline::Pipeline(const model::Model& model, comm::Communicator& world, const EngineConfig& config,
                   const PipelineLayout& layout, uint64_t seed, int micro_batch, int seq_len, bool checkpointing)
    : model_(model), world_(world), layout_(layout) {
  check_layout(model, world, config, layout);
  const int p = layout.stages;
  replicas_ = world.size() / p;
  stage_ = world.rank() / replicas_;
  replica_ = world.rank() % replicas_;
  const auto [first, end] = stage_ops(model, layout, stage_);
  stage_model_ = std::make_unique<model::StageModel>(model, first, end);

  // Groups, split in the same order on every rank (a rank outside a pair
  // gets a group of its own, which it drops).
  const int d = replicas_, me = world.rank();
  stage_comm_ = world.split(stage_);
  pipe_comm_ = world.split(replica_);
  auto pair = [&](int lower_stage_of_pair, bool in_pair) {
    auto group = world.split(in_pair ? lower_stage_of_pair * d + replica_ : world.size() + me);
    if (!in_pair) return std::unique_ptr<comm::Communicator>{};
    group->count_apart();
    return group;
  };
  // Pairs (0,1), (2,3), ... then (1,2), (3,4), ...
  auto even = pair(stage_ / 2 * 2, stage_ / 2 * 2 + 1 < p);
  auto odd = pair(stage_ < 1 ? 0 : (stage_ - 1) / 2 * 2 + 1, stage_ >= 1 && (stage_ - 1) / 2 * 2 + 2 < p);
  if (stage_ % 2 == 0) {
    above_ = std::move(even);
    below_ = std::move(odd);
  } else {
    below_ = std::move(even);
    above_ = std::move(odd);
  }

  // A unit of the whole model on both end stages.
  std::vector<int> shared_units;
  {
    const model::StageModel first_stage(model, 0, stage_ops(model, layout, 0).second);
    const auto [lf, le] = stage_ops(model, layout, p - 1);
    const model::StageModel last_stage(model, lf, le);
    for (int u : last_stage.whole_units()) {
      if (p > 1 && first_stage.unit_of(u) >= 0) shared_units.push_back(u);
    }
  }
  ZDP_CHECK(shared_units.size() <= 1, ConfigError,
            "[pipeline] {} units are used by both end stages; a pipeline keeps one tied unit", shared_units.size());
  const bool tied = !shared_units.empty();
  const bool end_stage = stage_ == 0 || stage_ == p - 1;
  auto tied_group = world.split(tied && end_stage ? replica_ : world.size() + me);
  if (tied && end_stage) {
    tied_group->count_apart();
    tied_ = std::move(tied_group);
    tied_unit_ = stage_model_->unit_of(shared_units.front());
  }

  engine_ = std::make_unique<Engine>(*stage_model_, *stage_comm_, config, seed, micro_batch, seq_len, checkpointing);
  Engine::StageLink link;
  link.pipeline = pipe_comm_.get();
  link.has_loss = stage_ == p - 1;
  if (tied_) {
    const size_t count = stage_model_->units()[static_cast<size_t>(tied_unit_)].count;
    tied_grad_ = engine_->book_floats(MemoryCategory::kComm, count);
    const auto unit = static_cast<size_t>(tied_unit_);
    if (stage_ == p - 1) {
      link.borrowed.assign(stage_model_->units().size(), false);
      link.borrowed[unit] = true;
      link.export_gradient = [this](size_t, int, std::span<const float> grad) {
        std::copy(grad.begin(), grad.end(), tied_grad_.span().begin());
      };
    } else {
      link.seed_gradient = [this, unit](size_t u, int, std::span<float> grad) {
        if (u != unit) return false;
        const std::span<const float> head = tied_grad_.span();
        std::copy(head.begin(), head.end(), grad.begin());
        return true;
      };
    }
  }
  engine_->link_stage(std::move(link));

  const int in_flight = micro_batches_in_flight(layout.schedule, p, stage_, config.grad_accum);
  workspaces_.push_back(&engine_->workspace());
  for (int i = 1; i < in_flight; ++i) workspaces_.push_back(&engine_->add_workspace());
  steps_ = pipeline_steps(layout.schedule, p, stage_, config.grad_accum, tied);
  // Both ends start from the same bits (each initialised its copy from the
  // seed; a load later sends them again).
  send_tied_params();
}

Pipeline::~Pipeline() = default;

void Pipeline::send_tied_params() {
  if (tied_) tied_->broadcast(engine_->unit_params(static_cast<size_t>(tied_unit_)), 0);
}

void Pipeline::state_loaded(const Engine::Counters& counters) {
  engine_->state_loaded(counters);
  send_tied_params();
}

void Pipeline::set_comm_timeout(std::chrono::milliseconds timeout) {
  for (comm::Communicator* c :
       {&world_, stage_comm_.get(), pipe_comm_.get(), below_.get(), above_.get(), tied_.get()}) {
    if (c != nullptr) c->set_timeout(timeout);
  }
  engine_->set_comm_timeout(timeout);
}

StepResult Pipeline::train_step(const BatchFeeder& feed) {
  std::vector<double> losses;
  const auto k = workspaces_.size();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double compute = 0;
  auto timed = [&compute](auto&& fn) {
    const auto t0 = Clock::now();
    fn();
    compute += std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (const PipeStep& step : steps_) {
    model::Workspace& ws = *workspaces_[static_cast<size_t>(step.micro) % k];
    const model::StageModel& sm = *stage_model_;
    switch (step.action) {
      case PipeAction::kRecvActivation:
        below_->broadcast(fp32(sm.input(ws)), 0);
        break;
      case PipeAction::kForward:
        feed(ws, step.micro);
        timed([&] { engine_->forward_micro(ws); });
        if (stage_ == layout_.stages - 1) losses.push_back(ws.loss());
        break;
      case PipeAction::kSendActivation:
        above_->broadcast(fp32(sm.output(ws)), 0);
        break;
      case PipeAction::kRecvGradient:
        above_->broadcast(fp32(sm.output_gradient(ws)), 1);
        break;
      case PipeAction::kBackward:
        timed([&] { engine_->backward_micro(ws, step.micro); });
        break;
      case PipeAction::kSendGradient:
        below_->broadcast(fp32(sm.input_gradient(ws)), 1);
        break;
      case PipeAction::kSendTiedGradient:
      case PipeAction::kRecvTiedGradient:
        tied_->broadcast(fp32(tied_grad_.span()), 1);  // from the last stage
        break;
    }
  }
  last_schedule_ = {std::chrono::duration<double>(Clock::now() - start).count(), compute};
  const StepResult result = engine_->finish_step(losses);
  send_tied_params();
  return result;
}

double Pipeline::eval_loss(const BatchFeeder& feed) {
  model::Workspace& ws = *workspaces_.front();
  const model::StageModel& sm = *stage_model_;
  if (below_) below_->broadcast(fp32(sm.input(ws)), 0);
  feed(ws, 0);
  engine_->forward_micro(ws);
  const bool last = stage_ == layout_.stages - 1;
  if (!last) above_->broadcast(fp32(sm.output(ws)), 0);
  const double mine = last ? stage_comm_->all_reduce_scalar(ws.loss(), comm::ReduceOp::kAvg) : 0.0;
  return pipe_comm_->all_reduce_scalar(mine, comm::ReduceOp::kSum);  // one stage's, and zeros
}

std::vector<int> Pipeline::unit_owners() const {
  std::vector<int> owner(model_.units().size(), -1);
  for (int s = layout_.stages - 1; s >= 0; --s) {  // the first stage last: the tied unit is its
    const auto [first, end] = stage_ops(model_, layout_, s);
    for (int i = first; i < end; ++i) owner[static_cast<size_t>(model_.ops()[static_cast<size_t>(i)].unit)] = s;
  }
  return owner;
}

LedgerBuffer<float> Pipeline::gather_params_to(int root) {
  LedgerBuffer<float> stage_params = engine_->gather_params_to(0);  // the stage's, on its replica 0
  LedgerBuffer<float> whole;
  if (world_.rank() == root) whole = engine_->book_floats(MemoryCategory::kScratch, model_.num_params());
  size_t largest = 0;
  for (const model::UnitInfo& u : model_.units()) largest = std::max(largest, u.count);
  LedgerBuffer<float> passing = engine_->book_floats(MemoryCategory::kScratch, largest);
  const std::vector<int> owner = unit_owners();
  for (size_t u = 0; u < owner.size(); ++u) {
    const model::UnitInfo& unit = model_.units()[u];
    const int from = owner[u] * replicas_;  // the owning stage's replica 0
    std::span<float> buf = passing.span().first(unit.count);
    if (world_.rank() == from) {
      const int here = stage_model_->unit_of(static_cast<int>(u));
      buf = stage_params.span().subspan(stage_model_->units()[static_cast<size_t>(here)].offset, unit.count);
    } else if (world_.rank() == root) {
      buf = whole.span().subspan(unit.offset, unit.count);
    }
    world_.broadcast(fp32(buf), from);
    if (world_.rank() == root && world_.rank() == from) {
      std::copy(buf.begin(), buf.end(), whole.span().begin() + static_cast<std::ptrdiff_t>(unit.offset));
    }
  }
  return whole;
}

void Pipeline::load_params(const ParamSource& source) {
  const model::StageModel& sm = *stage_model_;
  engine_->load_params([&](size_t first, std::span<float> out) {
    // Stage-flat [first, first + size) in pieces of the stage's units, each
    // read at its whole-model offset.
    size_t at = first;
    while (!out.empty()) {
      const auto& units = sm.units();
      size_t k = 0;
      while (units[k].offset + units[k].count <= at) ++k;
      const size_t take = std::min(out.size(), units[k].offset + units[k].count - at);
      const model::UnitInfo& whole = model_.units()[static_cast<size_t>(sm.whole_units()[k])];
      source(whole.offset + (at - units[k].offset), out.first(take));
      out = out.subspan(take);
      at += take;
    }
  });
  send_tied_params();
}

std::vector<float> Pipeline::gather_master_params() {
  const std::vector<float> mine = engine_->gather_master_params();
  std::vector<float> all(model_.num_params(), 0.0f);
  if (replica_ == 0) {
    const auto& units = stage_model_->units();
    for (size_t u = 0; u < units.size(); ++u) {
      // The tied unit counts once: the first stage's.
      if (static_cast<int>(u) == tied_unit_ && stage_ != 0) continue;
      const model::UnitInfo& whole = model_.units()[static_cast<size_t>(stage_model_->whole_units()[u])];
      std::copy_n(mine.begin() + static_cast<std::ptrdiff_t>(units[u].offset), units[u].count,
                  all.begin() + static_cast<std::ptrdiff_t>(whole.offset));
    }
  }
  // One rank holds each value, the others zeros: the sum is exact.
  world_.all_reduce(fp32(all), fp32(all), comm::ReduceOp::kSum);
  return all;
}

uint64_t Pipeline::sent_bytes() const {
  uint64_t sent = 0;
  for (const auto* group : {below_.get(), above_.get(), tied_.get()}) {
    if (group != nullptr) sent += group->stats()[comm::Collective::kBroadcast].bytes_sent;
  }
  return sent;
}

}  // namespace zerodp::zero
