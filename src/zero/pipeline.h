// SPDX-License-Identifier: Apache-2.0
// Pipeline: pipeline parallelism with ZeRO on one rank (docs/plan.md,
// Pipeline). N = P x D ranks, laid out stage by stage (rank = s x D + d);
// the model's ops are cut into P contiguous stages (model/stage_model.h),
// and each stage is an Engine over its D replicas, which partitions the
// stage's units as ZeRO's stage 0 or 1 says. A step runs the schedule's
// list for this rank's stage (core/pipeline_schedule.h): forwards and
// backwards of the replica's M micro-batches, the residual stream sent up
// and its gradient down between neighbours, then the engine's step, whose
// overflow flag, norm and loss cross the pipeline.
//
// The same bits as data parallelism: a stage's forward and backward are the
// whole model's ops on the same values; replica d's micro-batch m is global
// micro-batch m x D + d, as rank d's is at N = D; every stage reduces each
// micro-batch's gradients among its D replicas and sums them over the
// micro-batches in the engine's order. A unit both end stages use (GPT's
// tied token embedding) is held by both: the last stage sends its part of
// the gradient (the head's) to the first for every micro-batch, the first
// starts that micro-batch's backward of the unit from it (so the sum is
// the whole model's, in its order), reduces and updates the unit, and sends
// the updated parameters back after the step. So at fp32 a pipeline gives
// the bits of data parallelism at every power-of-two N with the same global
// batch; at bf16/fp16, those of N = D.
//
// Messages are two-rank broadcasts on groups of their own (rendezvous: the
// schedule's lists say in which order), called from the rank's thread; the
// engine's collectives stay on its comm thread. A failure in one stage
// breaks the world's groups, so every rank's call throws.
// Thread-safety: one Pipeline per rank, driven by that rank's thread.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/pipeline_schedule.h"
#include "model/stage_model.h"
#include "zero/engine.h"
#include "zero/trainable.h"

namespace zerodp::zero {

struct PipelineLayout {
  int stages = 1;  // P; N must be a multiple
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  // The first op of stages 1..P-1, ascending (P - 1 of them), each a place
  // the model can be cut (model::Model::can_cut_before).
  std::vector<int> cuts = {};
};

class Pipeline final : public Trainable {
 public:
  // Collective over `world`. ConfigError for a layout that does not fit
  // (P does not divide N, a cut out of order or where the model cannot be
  // cut, ZeRO stages 2-3, hybrid sharding, offload).
  Pipeline(const model::Model& model, comm::Communicator& world, const EngineConfig& config,
           const PipelineLayout& layout, uint64_t seed, int micro_batch, int seq_len, bool checkpointing = false);
  ~Pipeline() override;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // One optimizer step over config.grad_accum micro-batches per replica;
  // feed(ws, micro) loads this replica's micro-batch `micro` (global
  // micro-batch micro x D + replica()). Every stage calls it with the same
  // data: the first stage reads the inputs, the last the targets.
  StepResult train_step(const BatchFeeder& feed) override;
  // The replica's micro-batch 0 forward through the stages; the last
  // stage's losses averaged over the replicas, on every rank.
  double eval_loss(const BatchFeeder& feed) override;
  // Unit by unit from the stage that owns it (the tied unit: the first).
  // Every rank takes part and holds at most the largest unit meanwhile.
  LedgerBuffer<float> gather_params_to(int root) override;
  // Each stage reads its units from the whole model's offsets; the tied
  // unit's copies are made equal again.
  void load_params(const ParamSource& source) override;

  // Checkpoints (engine_ckpt/pipeline_checkpoint.h): the whole model, the
  // world, each unit's stage, and the end of a load.
  const model::Model& model() const { return model_; }
  comm::Communicator& world() { return world_; }
  // Per unit of the whole model: the stage that owns it (updates and saves
  // it; the tied unit is the first stage's).
  std::vector<int> unit_owners() const;
  // After every stage's engine views were filled: the engine's state_loaded,
  // then the tied unit's parameters to the last stage. Collective.
  void state_loaded(const Engine::Counters& counters);
  // The timeout of the world and of every group (CommTimeoutAtLeast).
  std::chrono::milliseconds comm_timeout() const override { return world_.options().timeout; }
  void set_comm_timeout(std::chrono::milliseconds timeout) override;

  int stage() const { return stage_; }
  int replica() const { return replica_; }
  int stages() const { return layout_.stages; }
  int replicas() const { return replicas_; }
  Engine& engine() override { return *engine_; }
  const model::StageModel& stage_model() const { return *stage_model_; }
  // Every parameter of the whole model as fp32 master values, in its flat
  // order, on every rank (tests, small models). Collective over the world.
  std::vector<float> gather_master_params();
  // The last step's schedule on this rank: its wall time (the list, from
  // the first message or forward to the last backward) and the time its
  // forwards and backwards ran; the rest is the bubble, which the formula
  // (P - 1) / (M + P - 1) predicts for equal stages.
  struct ScheduleTime {
    double schedule_s = 0, compute_s = 0;
    double bubble() const { return schedule_s > 0 ? 1.0 - compute_s / schedule_s : 0.0; }
  };
  ScheduleTime last_schedule() const { return last_schedule_; }
  // The bytes this rank sent to and received from its neighbours (the
  // residual stream, its gradient, the tied unit's gradient and parameters).
  uint64_t sent_bytes() const;

 private:
  // The first stage's tied unit's parameters, to the last stage.
  void send_tied_params();
  comm::Buffer fp32(std::span<float> s) const { return {s.data(), s.size(), Dtype::fp32()}; }

  const model::Model& model_;
  comm::Communicator& world_;
  PipelineLayout layout_;
  int replicas_ = 1, stage_ = 0, replica_ = 0;
  std::unique_ptr<model::StageModel> stage_model_;
  std::unique_ptr<comm::Communicator> stage_comm_;            // this stage's D replicas
  std::unique_ptr<comm::Communicator> pipe_comm_;             // this replica's P stages
  std::unique_ptr<comm::Communicator> below_, above_, tied_;  // two-rank groups; null where none
  std::unique_ptr<Engine> engine_;
  std::vector<model::Workspace*> workspaces_;  // one per micro-batch in flight
  std::vector<PipeStep> steps_;
  int tied_unit_ = -1;             // the stage's unit that the other end stage holds too
  LedgerBuffer<float> tied_grad_;  // one micro-batch's head part of its gradient
  ScheduleTime last_schedule_;
};

}  // namespace zerodp::zero
