// SPDX-License-Identifier: Apache-2.0
// The trainer's side of the metrics record (train/metrics.h): a step's
// result and every rank's figures become a report::StepRecord as the file
// promises (docs/train.md): grad_norm absent on a skipped step, val_loss only
// when computed, collectives without calls left out, every ledger category.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

#include "report/metrics_record.h"
#include "train/metrics.h"
#include "zero/engine.h"

namespace zerodp::train {
namespace {

TEST(MetricsRecordFromTrainer, StepRecordCarriesTheFigures) {
  zero::StepResult r;
  r.loss = 2.5;
  r.grad_norm = 0.75;
  r.lr = 0.001;
  r.loss_scale = 1024.0;
  r.clipped = true;
  std::vector<RankMemory> memory(2);
  memory[1].current[static_cast<size_t>(zero::MemoryCategory::kParams)] = 10;
  memory[1].peak[static_cast<size_t>(zero::MemoryCategory::kParams)] = 20;
  memory[1].model_states = 30;
  std::vector<comm::CommStats> step_comm(2);
  step_comm[0][comm::Collective::kAllGather] = {2, 100, 200, 0.5};
  step_comm[1][comm::Collective::kAllGather] = {2, 100, 200, 0.5};
  step_comm[1][comm::Collective::kReduceScatter] = {1, 50, 60, 0.25};

  const report::StepRecord s = step_record(7, r, 0.5, 1000.0, -1.0,
                                           AllRankFigures{.memory = memory,
                                                          .step_comm = step_comm,
                                                          .masked_targets = 40,
                                                          .step_cpu_seconds = {0.4375, 0.375},
                                                          .step_comm_cpu_seconds = {0.125, 0.0625},
                                                          .step_comm_wait_seconds = {0.25, 0.1875},
                                                          .step_runqueue_seconds = {0.0625, 0.125}});
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.loss, 2.5);
  // Of the step's 1000 targets, 40 were masked over every rank.
  EXPECT_EQ(s.masked_tokens, 40);
  EXPECT_EQ(s.trained_tokens, 960);
  EXPECT_FALSE(s.val_loss.has_value());  // negative: not computed this step
  EXPECT_EQ(s.grad_norm, 0.75);
  EXPECT_EQ(s.lr, 0.001);
  EXPECT_EQ(s.loss_scale, 1024.0);
  EXPECT_TRUE(s.clipped);
  EXPECT_FALSE(s.skipped);
  EXPECT_EQ(s.tokens_per_s, 2000.0);
  EXPECT_EQ(s.step_seconds, 0.5);
  EXPECT_EQ(s.cpu_seconds, (std::vector<double>{0.4375, 0.375}));
  EXPECT_EQ(s.comm_cpu_seconds, (std::vector<double>{0.125, 0.0625}));
  EXPECT_EQ(s.comm_wait_seconds, (std::vector<double>{0.25, 0.1875}));
  EXPECT_EQ(s.runqueue_seconds, (std::vector<double>{0.0625, 0.125}));
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(s.memory[0].categories.size(), zero::kNumMemoryCategories);
  const std::string params(zero::memory_category_name(zero::MemoryCategory::kParams));
  EXPECT_EQ(s.memory[1].categories.at(params).current, 10u);
  EXPECT_EQ(s.memory[1].categories.at(params).peak, 20u);
  EXPECT_EQ(s.memory[1].model_states, 30u);
  ASSERT_EQ(s.comm.size(), 2u);
  EXPECT_EQ(s.comm[0].size(), 1u);  // no calls, no entry
  const std::string scatter(comm::collective_name(comm::Collective::kReduceScatter));
  EXPECT_EQ(s.comm[1].at(scatter).calls, 1u);
  EXPECT_EQ(s.comm[1].at(scatter).bytes_sent, 50u);
  EXPECT_EQ(s.comm[1].at(scatter).bytes_received, 60u);
}

TEST(MetricsRecordFromTrainer, SkippedStepHasNoGradNormAndEvalStepHasValLoss) {
  zero::StepResult r;
  r.loss = 3.0;
  r.grad_norm = 123.0;  // what an overflowed step measured: not written
  r.skipped = true;
  const report::StepRecord s = step_record(1, r, 1.0, 10.0, 2.75, {});
  EXPECT_TRUE(s.skipped);
  EXPECT_FALSE(s.grad_norm.has_value());
  EXPECT_EQ(s.val_loss, 2.75);
  EXPECT_TRUE(report::to_json(s)["grad_norm"].is_null());
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

class ResumedMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zdp_metrics_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Interrupted after step 4 with its last checkpoint at step 2 (and a line cut
// short by the crash): the resumed run keeps steps 1-2, drops what it trains
// again, and appends its own config record and steps.
TEST_F(ResumedMetrics, KeepTheStepsUpToTheResumeAndAppend) {
  const auto path = dir_ / "m.jsonl";
  write_text(path,
             "{\"config\":{\"a\":1}}\n{\"step\":1,\"loss\":3}\n\n{\"step\":2,\"loss\":2}\n{\"step\":3,\"loss\":1}\n"
             "{\"step\":4,\"lo");
  {
    MetricsWriter writer(path.string(), 2);
    writer.write(nlohmann::json{{"config", {{"a", 2}}}});
    zero::StepResult r;
    r.loss = 1.5;
    writer.write(step_record(3, r, 1.0, 10.0, -1.0, {}));
  }
  std::istringstream lines(file_text(path));
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(lines, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0]["config"]["a"], 1);
  EXPECT_EQ(records[1]["step"], 1);
  EXPECT_EQ(records[2]["step"], 2);
  EXPECT_EQ(records[3]["config"]["a"], 2);
  EXPECT_EQ(records[4]["step"], 3);
  EXPECT_EQ(records[4]["loss"], 1.5);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "m.jsonl.resuming"));
}

// A finished run resumed to train further: its final record goes, its steps stay.
TEST_F(ResumedMetrics, AFinishedRunsFinalRecordGoes) {
  const auto path = dir_ / "m.jsonl";
  write_text(path, "{\"config\":{}}\n{\"step\":1,\"loss\":3}\n{\"final\":{\"step\":1,\"val_loss\":2}}\n");
  { const MetricsWriter writer(path.string(), 1); }
  EXPECT_EQ(file_text(path), "{\"config\":{}}\n{\"step\":1,\"loss\":3}\n");
}

TEST_F(ResumedMetrics, AMissingFileIsStarted) {
  const auto path = dir_ / "new.jsonl";
  {
    MetricsWriter writer(path.string(), 7);
    writer.write(nlohmann::json{{"config", nlohmann::json::object()}});
  }
  EXPECT_EQ(file_text(path), "{\"config\":{}}\n");
}

// Another file given as --metrics: refused by line, and left as it was.
TEST_F(ResumedMetrics, AFileThatIsNotMetricsIsRefusedAndKept) {
  const auto path = dir_ / "notes.txt";
  const std::string notes = "{\"step\":1,\"loss\":3}\nmy notes\n{\"step\":2,\"loss\":2}\n";
  write_text(path, notes);
  try {
    const MetricsWriter writer(path.string(), 1);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2 is not a record of a zerodp metrics file"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(file_text(path), notes);
}

}  // namespace
}  // namespace zerodp::train
