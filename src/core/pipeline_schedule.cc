// SPDX-License-Identifier: Apache-2.0
#include "core/pipeline_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp {

std::string_view pipeline_schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGpipe ? "gpipe" : "1f1b";
}

PipelineSchedule parse_pipeline_schedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  ZDP_CHECK(name == "1f1b", ConfigError, "[pipeline] --pipeline-schedule '{}' is not known: use 1f1b or gpipe", name);
  return PipelineSchedule::kOneFOneB;
}

double bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

int micro_batches_in_flight(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
  return schedule == PipelineSchedule::kGpipe ? micro_batches : std::min(stages - stage, micro_batches);
}

std::string_view pipe_action_name(PipeAction action) {
  switch (action) {
    case PipeAction::kRecvActivation:
      return "recv-activation";
    case PipeAction::kForward:
      return "forward";
    case PipeAction::kSendActivation:
      return "send-activation";
    case PipeAction::kRecvGradient:
      return "recv-gradient";
    case PipeAction::kBackward:
      return "backward";
    case PipeAction::kSendGradient:
      return "send-gradient";
    case PipeAction::kSendTiedGradient:
      return "send-tied-gradient";
    case PipeAction::kRecvTiedGradient:
      return "recv-tied-gradient";
  }
  return "?";
}

namespace {

// Appends steps, dropping the messages a stage at either end has no
// neighbour for.
class StepList {
 public:
  StepList(int stages, int stage, bool tied)
      : first_(stage == 0), last_(stage == stages - 1), tied_(tied && stages > 1) {}
  void add(PipeAction action, int micro) {
    const bool from_below = action == PipeAction::kRecvActivation || action == PipeAction::kSendGradient;
    const bool from_above = action == PipeAction::kSendActivation || action == PipeAction::kRecvGradient;
    if ((from_below && first_) || (from_above && last_)) return;
    if (action == PipeAction::kBackward && first_ && tied_) steps_.push_back({PipeAction::kRecvTiedGradient, micro});
    steps_.push_back({action, micro});
  }
  // After a micro-batch's backward and its gradient's send.
  void backward_done(int micro) {
    if (last_ && tied_) steps_.push_back({PipeAction::kSendTiedGradient, micro});
  }
  std::vector<PipeStep> take() { return std::move(steps_); }

 private:
  bool first_, last_, tied_;
  std::vector<PipeStep> steps_;
};

}  // namespace

std::vector<PipeStep> pipeline_steps(PipelineSchedule schedule, int stages, int stage, int micro_batches, bool tied) {
  ZDP_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1, ConfigError,
            "[pipeline] stage {} of {} with {} micro-batches", stage, stages, micro_batches);
  StepList list(stages, stage, tied);
  using A = PipeAction;
  const int m = micro_batches;
  if (schedule == PipelineSchedule::kGpipe) {
    for (int i = 0; i < m; ++i) {
      list.add(A::kRecvActivation, i);
      list.add(A::kForward, i);
      list.add(A::kSendActivation, i);
    }
    for (int i = 0; i < m; ++i) {
      list.add(A::kRecvGradient, i);
      list.add(A::kBackward, i);
      list.add(A::kSendGradient, i);
      list.backward_done(i);
    }
    return list.take();
  }
  const int warmup = std::min(stages - stage - 1, m);
  const int steady = m - warmup;
  for (int i = 0; i < warmup; ++i) {
    list.add(A::kRecvActivation, i);
    list.add(A::kForward, i);
    list.add(A::kSendActivation, i);
  }
  if (steady > 0) list.add(A::kRecvActivation, warmup);
  for (int i = 0; i < steady; ++i) {
    list.add(A::kForward, warmup + i);
    // Megatron's send_forward_recv_backward, activation first.
    list.add(A::kSendActivation, warmup + i);
    list.add(A::kRecvGradient, i);
    list.add(A::kBackward, i);
    // send_backward_recv_forward, activation first (none after the last).
    if (i + 1 < steady) list.add(A::kRecvActivation, warmup + i + 1);
    list.add(A::kSendGradient, i);
    list.backward_done(i);
  }
  for (int i = steady; i < m; ++i) {
    list.add(A::kRecvGradient, i);
    list.add(A::kBackward, i);
    list.add(A::kSendGradient, i);
    list.backward_done(i);
  }
  return list.take();
}

}  // namespace zerodp
