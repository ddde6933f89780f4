// SPDX-License-Identifier: Apache-2.0
// Crash safety: a save interrupted at any point — by an exception, or by
// SIGKILL of the whole process — leaves the previous checkpoint and `latest`
// loadable and intact; the new checkpoint is visible only when complete.
// Also: --keep-last rotation and re-saving the same step.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt/offline.h"
#include "ckpt_test_util.h"

namespace zerodp::ckpt::testing {
namespace {

constexpr int kRanks = 2;

const std::vector<SavePoint> kPoints = {SavePoint::kBegin,        SavePoint::kShardPartial,
                                        SavePoint::kShardWritten, SavePoint::kManifestWritten,
                                        SavePoint::kDirRenamed,   SavePoint::kLatestWritten};

// The rank that is interrupted at a point: a non-zero rank for the points
// every rank reaches, rank 0 for rank 0's own steps.
int victim(SavePoint p) {
  return p == SavePoint::kBegin || p == SavePoint::kShardPartial || p == SavePoint::kShardWritten ? 1 : 0;
}

// Saves the state after `steps` steps at 2 ranks into root; returns it.
FullState save_after(const std::string& root, int steps, const SaveOptions& options = {.seed = kSeed}) {
  const model::Mlp mlp(small_mlp());
  FullState state;
  std::mutex mu;
  // Errors propagate (the interrupted saves throw).
  comm::run_thread_ranks(kRanks, zerodp::testing::test_comm_options(), [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(1), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, steps, losses);
    collect_state(engine, state, mu);
    save(engine, root, options);
  });
  return state;
}

// Loads whatever `root` resolves to and returns the state.
FullState load_state(const std::string& root) {
  const model::Mlp mlp(small_mlp());
  FullState state;
  std::mutex mu;
  zerodp::testing::run_on_ranks(kRanks, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(1), kSeed, kMicro, 1);
    load(engine, root);
    collect_state(engine, state, mu);
  });
  return state;
}

// Whether the interruption came before the new checkpoint became visible
// under the name `latest` resolves to.
bool new_is_visible(SavePoint p) { return p == SavePoint::kLatestWritten; }

// After a save of step 3 was interrupted at `p`: what `root` resolves to is
// complete and intact, and it is the new checkpoint only when the
// interruption came after `latest` named it, else exactly `before`.
void expect_intact_after_interruption(const std::string& root, SavePoint p, const FullState& before) {
  EXPECT_TRUE(inspect_checkpoint(root).ok());
  const FullState now = load_state(root);
  std::string why;
  if (new_is_visible(p)) {
    EXPECT_EQ(now.counters.steps, 3);
  } else {
    EXPECT_TRUE(same_state(now, before, &why)) << why;
  }
}

TEST(CrashSafety, InterruptedByAnExceptionAtEveryPoint) {
  for (const SavePoint p : kPoints) {
    SCOPED_TRACE(static_cast<int>(p));
    TempDir root;
    const FullState before = save_after(root.path(), 2);
    SaveOptions options{.seed = kSeed};
    options.on_point = [p](SavePoint at, int rank) {
      if (at == p && rank == victim(p)) throw IoError("simulated failure");
    };
    EXPECT_ANY_THROW(save_after(root.path(), 3, options));
    expect_intact_after_interruption(root.path(), p, before);
    // The next save succeeds and cleans up what the interrupted one left.
    save_after(root.path(), 4, {.seed = kSeed, .keep_last = 5});
    EXPECT_EQ(load_state(root.path()).counters.steps, 4);
    for (const auto& e : fs::directory_iterator(root.path())) {
      const std::string name = e.path().filename().string();
      EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
      EXPECT_EQ(name.find(".prev"), std::string::npos) << name;
    }
  }
}

TEST(CrashSafety, KilledWithSigkillAtEveryPoint) {
  // Each save runs in a child process that SIGKILLs itself (every rank
  // thread at once, no destructors, no cleanup) at one point of the save.
  for (const SavePoint p : kPoints) {
    SCOPED_TRACE(static_cast<int>(p));
    TempDir root;
    const FullState before = save_after(root.path(), 2);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      SaveOptions options{.seed = kSeed};
      options.on_point = [p](SavePoint at, int rank) {
        if (at == p && rank == victim(p)) ::kill(::getpid(), SIGKILL);
      };
      try {
        save_after(root.path(), 3, options);
      } catch (...) {
      }
      ::_exit(0);  // not reached when the kill happened
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
    expect_intact_after_interruption(root.path(), p, before);
    // The previous checkpoint directory itself is untouched.
    if (!new_is_visible(p)) {
      EXPECT_TRUE(is_complete_checkpoint(root / step_dir_name(2)));
    }
  }
}

TEST(Rotation, KeepLastKeepsTheNewest) {
  TempDir root;
  for (int steps = 1; steps <= 4; ++steps) save_after(root.path(), steps, {.seed = kSeed, .keep_last = 2});
  const auto all = list_checkpoints(root.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 3);
  EXPECT_EQ(all[1].step, 4);
  EXPECT_EQ(read_latest(root.path()), step_dir_name(4));
  EXPECT_EQ(resolve_checkpoint(root.path()), root / step_dir_name(4));
}

TEST(Rotation, NeverRemovesWhatLatestNames) {
  TempDir root;
  save_after(root.path(), 5);
  save_after(root.path(), 6);
  save_after(root.path(), 1, {.seed = kSeed, .keep_last = 1});  // a resumed, older branch
  EXPECT_EQ(read_latest(root.path()), step_dir_name(1));
  EXPECT_TRUE(is_complete_checkpoint(root / step_dir_name(1)));
  EXPECT_EQ(load_state(root.path()).counters.steps, 1);
}

TEST(Rotation, ResavingTheSameStepReplacesIt) {
  TempDir root;
  save_after(root.path(), 2);
  const FullState again = save_after(root.path(), 2, {.seed = 7});
  std::string why;
  EXPECT_TRUE(same_state(load_state(root.path()), again, &why)) << why;
  EXPECT_FALSE(fs::exists(root / (step_dir_name(2) + ".prev")));
  EXPECT_EQ(read_manifest(root / step_dir_name(2)).seed, 7u);
}

TEST(Rotation, InterruptedReplacementFallsBackToPrev) {
  // Killed between moving the old step-2 aside and putting the new one in place.
  TempDir root;
  const FullState first = save_after(root.path(), 2);
  fs::rename(root / step_dir_name(2), root / (step_dir_name(2) + ".prev"));
  EXPECT_EQ(resolve_checkpoint(root.path()), root / (step_dir_name(2) + ".prev"));
  std::string why;
  EXPECT_TRUE(same_state(load_state(root.path()), first, &why)) << why;
}

}  // namespace
}  // namespace zerodp::ckpt::testing
