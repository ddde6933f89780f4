// SPDX-License-Identifier: Apache-2.0
// The pipeline's step lists: every stage's list run against its neighbours'
// with rendezvous messages finishes (no wait that never ends), every
// micro-batch's forward and backward run once per stage in a valid order,
// and the micro-batches in flight are the schedule's count.
#include "core/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace zerodp {
namespace {

using A = PipeAction;

// The action at the other end of a message, on the neighbour's list.
bool matches(PipeStep mine, PipeStep theirs) {
  if (mine.micro != theirs.micro) return false;
  switch (mine.action) {
    case A::kSendActivation:
      return theirs.action == A::kRecvActivation;
    case A::kRecvActivation:
      return theirs.action == A::kSendActivation;
    case A::kSendGradient:
      return theirs.action == A::kRecvGradient;
    case A::kRecvGradient:
      return theirs.action == A::kSendGradient;
    case A::kSendTiedGradient:
      return theirs.action == A::kRecvTiedGradient;
    case A::kRecvTiedGradient:
      return theirs.action == A::kSendTiedGradient;
    default:
      return false;
  }
}

// Runs every stage's list; returns false on a wait that never ends. Counts
// each stage's largest number of micro-batches forwarded but not yet
// backwarded, and checks the order of each micro-batch's steps.
bool run_lists(PipelineSchedule schedule, int stages, int micros, bool tied, std::vector<int>& most_in_flight) {
  std::vector<std::vector<PipeStep>> lists;
  for (int s = 0; s < stages; ++s) lists.push_back(pipeline_steps(schedule, stages, s, micros, tied));
  std::vector<int> tied_received(static_cast<size_t>(micros), 0);
  std::vector<size_t> at(static_cast<size_t>(stages), 0);
  std::vector<int> in_flight(static_cast<size_t>(stages), 0);
  most_in_flight.assign(static_cast<size_t>(stages), 0);
  // Per stage and micro-batch: 0 nothing, 1 input here, 2 forwarded, 3 gradient here, 4 backwarded.
  std::vector<std::vector<int>> state(static_cast<size_t>(stages), std::vector<int>(static_cast<size_t>(micros), 0));
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      const auto su = static_cast<size_t>(s);
      if (at[su] == lists[su].size()) continue;
      const PipeStep step = lists[su][at[su]];
      auto& st = state[su][static_cast<size_t>(step.micro)];
      switch (step.action) {
        case A::kForward:
          EXPECT_EQ(st, s == 0 ? 0 : 1) << "stage " << s << " forward " << step.micro;
          st = 2;
          most_in_flight[su] = std::max(most_in_flight[su], ++in_flight[su]);
          break;
        case A::kBackward:
          EXPECT_EQ(st, s == stages - 1 ? 2 : 3) << "stage " << s << " backward " << step.micro;
          if (s == 0 && tied && stages > 1) {
            EXPECT_EQ(tied_received[static_cast<size_t>(step.micro)], 1) << "backward before the tied gradient";
          }
          st = 4;
          --in_flight[su];
          break;
        default: {
          int peer = step.action == A::kSendActivation || step.action == A::kRecvGradient ? s + 1 : s - 1;
          if (step.action == A::kSendTiedGradient) peer = 0;
          if (step.action == A::kRecvTiedGradient) peer = stages - 1;
          const auto pu = static_cast<size_t>(peer);
          if (peer < 0 || peer >= stages || at[pu] == lists[pu].size() || !matches(step, lists[pu][at[pu]])) continue;
          // Both ends move at once.
          if (step.action == A::kRecvActivation) st = 1;
          if (step.action == A::kRecvGradient) st = 3;
          if (step.action == A::kRecvTiedGradient) tied_received[static_cast<size_t>(step.micro)] = 1;
          if (step.action == A::kSendTiedGradient) {
            tied_received[static_cast<size_t>(step.micro)] = 1;
            EXPECT_EQ(st, 4) << "the tied gradient leaves before the last stage's backward";
          }
          const PipeStep other = lists[pu][at[pu]];
          auto& pst = state[pu][static_cast<size_t>(other.micro)];
          if (other.action == A::kRecvActivation) pst = 1;
          if (other.action == A::kRecvGradient) pst = 3;
          if (step.action == A::kSendActivation || step.action == A::kSendGradient) {
            EXPECT_EQ(st, step.action == A::kSendActivation ? 2 : 4) << "stage " << s << " sends too early";
          }
          ++at[pu];
          break;
        }
      }
      ++at[su];
      progress = true;
    }
  }
  for (int s = 0; s < stages; ++s) {
    if (at[static_cast<size_t>(s)] != lists[static_cast<size_t>(s)].size()) return false;
    for (int m = 0; m < micros; ++m) EXPECT_EQ(state[static_cast<size_t>(s)][static_cast<size_t>(m)], 4);
  }
  return true;
}

TEST(PipelineSchedule, EveryListRunsAgainstItsNeighboursToTheEnd) {
  for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (int stages = 1; stages <= 5; ++stages) {
      for (int micros = 1; micros <= 9; ++micros) {
        for (bool tied : {false, true}) {
          std::vector<int> most;
          ASSERT_TRUE(run_lists(schedule, stages, micros, tied, most))
              << pipeline_schedule_name(schedule) << " P=" << stages << " M=" << micros << (tied ? " tied" : "")
              << " never ends";
          for (int s = 0; s < stages; ++s) {
            EXPECT_EQ(most[static_cast<size_t>(s)], micro_batches_in_flight(schedule, stages, s, micros))
                << pipeline_schedule_name(schedule) << " P=" << stages << " M=" << micros << " stage " << s;
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, TiedGradientsCrossOnlyBetweenTheEnds) {
  for (int s = 0; s < 3; ++s) {
    int sends = 0, recvs = 0;
    for (const PipeStep& step : pipeline_steps(PipelineSchedule::kOneFOneB, 3, s, 4, true)) {
      sends += step.action == A::kSendTiedGradient ? 1 : 0;
      recvs += step.action == A::kRecvTiedGradient ? 1 : 0;
    }
    EXPECT_EQ(sends, s == 2 ? 4 : 0);
    EXPECT_EQ(recvs, s == 0 ? 4 : 0);
  }
  for (const PipeStep& step : pipeline_steps(PipelineSchedule::kGpipe, 1, 0, 4, true)) {
    EXPECT_NE(step.action, A::kSendTiedGradient);
    EXPECT_NE(step.action, A::kRecvTiedGradient);
  }
}

TEST(PipelineSchedule, BackwardsRunInMicroBatchOrder) {
  for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (int s = 0; s < 4; ++s) {
      int next = 0;
      for (const PipeStep& step : pipeline_steps(schedule, 4, s, 7)) {
        if (step.action == A::kBackward) {
          EXPECT_EQ(step.micro, next++);
        }
      }
      EXPECT_EQ(next, 7);
    }
  }
}

TEST(PipelineSchedule, OneFOneBOnTwoStagesIsMegatrons) {
  using S = PipeStep;
  const std::vector<PipeStep> first = pipeline_steps(PipelineSchedule::kOneFOneB, 2, 0, 3);
  const std::vector<PipeStep> expect_first = {
      S{A::kForward, 0},      S{A::kSendActivation, 0}, S{A::kForward, 1},      S{A::kSendActivation, 1},
      S{A::kRecvGradient, 0}, S{A::kBackward, 0},       S{A::kForward, 2},      S{A::kSendActivation, 2},
      S{A::kRecvGradient, 1}, S{A::kBackward, 1},       S{A::kRecvGradient, 2}, S{A::kBackward, 2}};
  EXPECT_EQ(first, expect_first);
  const std::vector<PipeStep> last = pipeline_steps(PipelineSchedule::kOneFOneB, 2, 1, 3);
  const std::vector<PipeStep> expect_last = {
      S{A::kRecvActivation, 0}, S{A::kForward, 0}, S{A::kBackward, 0}, S{A::kRecvActivation, 1},
      S{A::kSendGradient, 0},   S{A::kForward, 1}, S{A::kBackward, 1}, S{A::kRecvActivation, 2},
      S{A::kSendGradient, 1},   S{A::kForward, 2}, S{A::kBackward, 2}, S{A::kSendGradient, 2}};
  EXPECT_EQ(last, expect_last);
}

TEST(PipelineSchedule, NamesAndRefusals) {
  EXPECT_EQ(parse_pipeline_schedule("gpipe"), PipelineSchedule::kGpipe);
  EXPECT_EQ(pipeline_schedule_name(parse_pipeline_schedule("1f1b")), "1f1b");
  EXPECT_THROW(parse_pipeline_schedule("zb-h1"), ConfigError);
  EXPECT_THROW(pipeline_steps(PipelineSchedule::kGpipe, 2, 2, 4), ConfigError);
  EXPECT_THROW(pipeline_steps(PipelineSchedule::kGpipe, 2, 0, 0), ConfigError);
  EXPECT_EQ(pipe_action_name(A::kRecvGradient), "recv-gradient");
}

}  // namespace
}  // namespace zerodp
