// SPDX-License-Identifier: Apache-2.0
// What mpirun's environment tells a process (comm::mpi_launch): the job's
// and the host's process counts, and a refusal naming a value that is not
// a count (it was read as 0 before). The tests set the variables themselves
// and restore them; they run on one thread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "comm/mpi.h"
#include "core/error.h"
#include "support/scoped_env.h"

namespace zerodp::comm {
namespace {

using testing::ScopedEnv;

TEST(MpiLaunch, NoLauncherIsNoLaunch) {
  const ScopedEnv a("OMPI_COMM_WORLD_SIZE", std::nullopt), b("PMI_SIZE", std::nullopt),
      c("SLURM_STEP_NUM_TASKS", std::nullopt);
  EXPECT_FALSE(mpi_launch().has_value());
  EXPECT_FALSE(mpi_launched());
}

TEST(MpiLaunch, CountsComeFromOpenMpiOrPmi) {
  const ScopedEnv a("OMPI_COMM_WORLD_SIZE", "4"), b("OMPI_COMM_WORLD_LOCAL_SIZE", "2"), c("PMI_SIZE", std::nullopt),
      s("SLURM_STEP_NUM_TASKS", std::nullopt);
  ASSERT_TRUE(mpi_launch().has_value());
  EXPECT_EQ(mpi_launch()->processes, 4);
  EXPECT_EQ(mpi_launch()->processes_on_host, 2);
  const ScopedEnv d("OMPI_COMM_WORLD_SIZE", std::nullopt), e("OMPI_COMM_WORLD_LOCAL_SIZE", std::nullopt),
      f("PMI_SIZE", "3"), g("MPI_LOCALNRANKS", std::nullopt);
  EXPECT_EQ(mpi_launch()->processes, 3);
  EXPECT_EQ(mpi_launch()->processes_on_host, 1);  // the launcher does not say: alone
}

// Slurm's srun: the step's task count, this task's rank and the tasks on
// its node from the per-node list; a one-task step (a batch script's srun
// -n 1, or no step at all) is not a job of several processes.
TEST(MpiLaunch, SrunIsDetectedFromTheStepsTasks) {
  const ScopedEnv a("OMPI_COMM_WORLD_SIZE", std::nullopt), b("PMI_SIZE", "6"), c("SLURM_STEP_NUM_TASKS", "6"),
      d("SLURM_PROCID", "4"), e("SLURM_NODEID", "2"), f("SLURM_STEP_TASKS_PER_NODE", "2(x2),1,1");
  ASSERT_TRUE(mpi_launch().has_value());
  EXPECT_EQ(mpi_launch()->launcher, Launcher::kSrun);  // before PMI, which srun --mpi=pmi2 sets too
  EXPECT_EQ(mpi_launch()->processes, 6);
  EXPECT_EQ(mpi_launch()->rank, 4);
  EXPECT_EQ(mpi_launch()->processes_on_host, 1);
  const ScopedEnv g("SLURM_NODEID", "1");
  EXPECT_EQ(mpi_launch()->processes_on_host, 2);
  EXPECT_EQ(launch_command(mpi_launch()->launcher, 6), "srun -n 6");
  const ScopedEnv h("SLURM_STEP_TASKS_PER_NODE", "2(x2");
  EXPECT_THROW((void)mpi_launch(), ConfigError);
  const ScopedEnv i("SLURM_STEP_NUM_TASKS", "1"), j("PMI_SIZE", std::nullopt);
  EXPECT_FALSE(mpi_launch().has_value());
}

TEST(MpiLaunch, OpenMpisMpirunComesFirst) {
  const ScopedEnv a("OMPI_COMM_WORLD_SIZE", "2"), b("OMPI_COMM_WORLD_RANK", "1"), c("SLURM_STEP_NUM_TASKS", "1"),
      d("PMI_SIZE", std::nullopt);
  ASSERT_TRUE(mpi_launch().has_value());
  EXPECT_EQ(mpi_launch()->launcher, Launcher::kMpirun);
  EXPECT_EQ(mpi_launch()->rank, 1);
  EXPECT_EQ(launch_command(Launcher::kMpirun, 2), "mpirun -np 2");
  EXPECT_EQ(launch_command(Launcher::kPmi, 3), "mpiexec -n 3");
}

TEST(MpiLaunch, AValueThatIsNotACountIsRefusedByName) {
  for (const char* bad : {"abc", "", "0", "-2", "4x", "99999999999"}) {
    const ScopedEnv a("OMPI_COMM_WORLD_SIZE", bad);
    try {
      (void)mpi_launch();
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("OMPI_COMM_WORLD_SIZE='") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace zerodp::comm
