// SPDX-License-Identifier: Apache-2.0
// The resume command a run prints (train/step_observers.h): run as printed it
// continues the run on the same backend, so under MPI it names the launcher.
#include <gtest/gtest.h>

#include "train/step_observers.h"

namespace zerodp::train {
namespace {

TEST(ResumeCommand, NamesTheLauncherUnderMpi) {
  TrainConfig config;
  config.save_every = 5;
  config.backend = comm::Backend::kMpi;
  EXPECT_EQ(resume_command(config, "runs/a", 4),
            "mpirun -np 4 zerodp train --resume runs/a --save runs/a --save-every 5");
  config.backend = comm::Backend::kThread;
  EXPECT_EQ(resume_command(config, "runs/a", 4), "zerodp train --resume runs/a --save runs/a --save-every 5");
}

TEST(ResumeCommand, KeepsTheLayoutTheRunWasGiven) {
  TrainConfig config;
  config.ranks = 4;
  config.sources["ranks"] = "flag --ranks";
  config.engine.stage = Stage::k1;
  config.pipeline_stages = 2;
  EXPECT_EQ(resume_command(config, "runs/p", 4),
            "zerodp train --resume runs/p --save runs/p --ranks 4 --stage 1 --pipeline-stages 2");
  config.pipeline_cut = {3, 1};
  config.pipeline_schedule = PipelineSchedule::kGpipe;
  config.sources["pipeline-schedule"] = "flag --pipeline-schedule";
  EXPECT_EQ(resume_command(config, "runs/p", 4),
            "zerodp train --resume runs/p --save runs/p --ranks 4 --stage 1 --pipeline-stages 2 --pipeline-schedule "
            "gpipe --pipeline-cut 3,1");
  // Data parallelism: the stage when it was given.
  TrainConfig dp;
  dp.engine.stage = Stage::k2;
  EXPECT_EQ(resume_command(dp, "runs/d", 2), "zerodp train --resume runs/d --save runs/d");
  dp.sources["stage"] = "config zero_optimization.stage";
  EXPECT_EQ(resume_command(dp, "runs/d", 2), "zerodp train --resume runs/d --save runs/d --stage 2");
}

}  // namespace
}  // namespace zerodp::train
