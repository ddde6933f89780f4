// SPDX-License-Identifier: Apache-2.0
// A pipeline's schedules (GPipe and 1F1B): for each stage, the order of its
// forwards, backwards and the messages to and from its neighbours over one
// step of M micro-batches. The engine (zero/pipeline.h) runs these lists and
// the planner (plan/pipeline.h) counts the micro-batches they keep in
// flight; both read this one home, which lives in core because plan may not
// include zero.
//
// GPipe: every micro-batch's forward, then every backward. 1F1B (Narayanan
// et al., PipeDream-Flush; Megatron-LM's non-interleaved schedule): stage s
// runs W = min(P - s - 1, M) warm-up forwards, then alternates one forward
// and one backward, then the remaining backwards; it holds min(P - s, M)
// micro-batches at once instead of M. Backwards run in micro-batch order
// under both, as the engine's pairwise sum over micro-batches needs.
//
// Messages are rendezvous (both neighbours call for the same message at
// once: the engine's point-to-point groups are two-rank collectives), so
// the two ends of every link must name the same messages in the same order.
// Where 1F1B sends a forward and receives a backward at once (Megatron's
// batched send_forward_recv_backward and its mirror), the lists put the
// activation first on both ends. tests/core/pipeline_schedule_test.cc runs
// every list against its neighbours and finds no wait that never ends.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace zerodp {

enum class PipelineSchedule : uint8_t { kGpipe, kOneFOneB };
std::string_view pipeline_schedule_name(PipelineSchedule schedule);  // "gpipe", "1f1b"
// ConfigError naming the two for anything else.
PipelineSchedule parse_pipeline_schedule(std::string_view name);

// (P - 1) / (M + P - 1): the share of a step each stage idles.
double bubble_fraction(int stages, int micro_batches);
// The micro-batches whose activations stage `stage` (0-based) holds at once.
int micro_batches_in_flight(PipelineSchedule schedule, int stages, int stage, int micro_batches);

enum class PipeAction : uint8_t {
  kRecvActivation,  // from stage - 1: the input of this stage's first op
  kForward,
  kSendActivation,  // to stage + 1
  kRecvGradient,    // from stage + 1: the gradient of this stage's output
  kBackward,
  kSendGradient,  // to stage - 1
  // A unit both end stages hold (GPT's tied token embedding): the last
  // stage's part of its gradient goes to the first stage, which starts that
  // micro-batch's backward of the unit from it.
  kSendTiedGradient,  // the last stage, after the micro-batch's backward and its gradient's send
  kRecvTiedGradient,  // the first stage, before the micro-batch's backward
};
std::string_view pipe_action_name(PipeAction action);

struct PipeStep {
  PipeAction action = PipeAction::kForward;
  int micro = 0;
  bool operator==(const PipeStep&) const = default;
};

// Stage `stage`'s list for one step of `micro_batches` (ConfigError on
// stages < 1, stage outside [0, stages) or micro_batches < 1). The first
// stage receives no activations and sends no gradients; the last sends no
// activations and receives no gradients. `tied`: the model has a unit on
// both end stages (P > 1), whose messages join the lists.
std::vector<PipeStep> pipeline_steps(PipelineSchedule schedule, int stages, int stage, int micro_batches,
                                     bool tied = false);

}  // namespace zerodp
