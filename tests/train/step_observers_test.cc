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

}  // namespace
}  // namespace zerodp::train
