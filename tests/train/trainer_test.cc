// SPDX-License-Identifier: Apache-2.0
// run_training in-process, on thread ranks: the whole trainer (setup, the
// per-rank loop, its observers) without the CLI. Short runs of gpt-tiny on
// the embedded corpus.
#include "train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace zerodp::train {
namespace {

namespace fs = std::filesystem;

TrainConfig short_run(int stage, int steps) {
  TrainConfig c;
  c.ranks = 2;
  c.steps = steps;
  c.engine.stage = parse_stage(stage, "test");
  c.eval_every = 0;
  c.eval_batches = 1;
  c.sample_tokens = 0;
  c.held_out = 0;
  return c;
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "." + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(a[i]), std::bit_cast<uint64_t>(b[i]))
        << what << ": step " << i << " " << a[i] << " vs " << b[i];
  }
}

TEST(Trainer, EveryStageTrainsToTheSameBits) {
  const TrainOutcome s0 = run_training(short_run(0, 5));
  ASSERT_EQ(s0.losses.size(), 5u);
  EXPECT_EQ(s0.ranks, 2);
  EXPECT_TRUE(std::isfinite(s0.final_val_loss));
  EXPECT_GT(s0.planned_bytes, s0.baseline_bytes);
  for (int stage = 1; stage <= 3; ++stage) {
    expect_same_bits(s0.losses, run_training(short_run(stage, 5)).losses, "stage " + std::to_string(stage));
  }
}

TEST(Trainer, AResumeContinuesTheStraightRunsLosses) {
  const fs::path dir = temp_dir("zerodp_trainer_resume");
  TrainConfig first = short_run(2, 6);
  first.save_dir = dir.string();
  first.save_every = 3;
  const TrainOutcome straight = run_training(first);
  ASSERT_EQ(straight.losses.size(), 6u);
  ASSERT_TRUE(fs::exists(dir / "step-00000003" / "manifest.json"));

  TrainConfig resumed = short_run(2, 6);
  resumed.resume_dir = (dir / "step-00000003").string();
  const TrainOutcome rest = run_training(resumed);
  expect_same_bits({straight.losses.begin() + 3, straight.losses.end()}, rest.losses, "resumed at step 3");
  fs::remove_all(dir);
}

TEST(Trainer, TheMetricsFileHasTheConfigEveryStepAndTheFinalPass) {
  const fs::path dir = temp_dir("zerodp_trainer_metrics");
  fs::create_directories(dir);
  TrainConfig c = short_run(3, 4);
  c.eval_every = 2;
  c.metrics_path = (dir / "m.jsonl").string();
  const TrainOutcome out = run_training(c);
  std::ifstream in(c.metrics_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 4u + 1u);
  EXPECT_EQ(lines.front().rfind("{\"build\":", 0), 0u) << lines.front();
  EXPECT_NE(lines[2].find("\"val_loss\""), std::string::npos) << "step 2 is evaluated: " << lines[2];
  EXPECT_EQ(lines[1].find("\"val_loss\""), std::string::npos) << "step 1 is not: " << lines[1];
  EXPECT_EQ(lines.back().rfind("{\"final\":", 0), 0u) << lines.back();
  EXPECT_EQ(out.losses.size(), 4u);
  fs::remove_all(dir);
}

TEST(Trainer, ARefusedRunStartsNoRankAndWritesNothing) {
  const fs::path dir = temp_dir("zerodp_trainer_refused");
  fs::create_directories(dir);
  TrainConfig c = short_run(0, 4);
  c.seq_len = 100000;  // longer than gpt-tiny's context
  c.metrics_path = (dir / "m.jsonl").string();
  EXPECT_THROW(run_training(c), ConfigError);
  EXPECT_FALSE(fs::exists(c.metrics_path));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zerodp::train
