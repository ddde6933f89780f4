// SPDX-License-Identifier: Apache-2.0
// Outputs that cannot be written are refused before the work starts
// (train/output_preflight.h): `zerodp train` before step 1 (nothing printed
// on stdout, no rank started), the other commands before they read their
// inputs. Exit code 2 and one line naming the output; nothing on disk
// changes (an existing metrics file keeps its bytes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;
using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::run;

// A run that would take seconds, were it not refused.
constexpr const char* kTrain = "train --ranks 2 --steps 50 --sample-tokens 0 --eval-every 0";

// Refused with exit code 2, one line holding `needle`, before step 1:
// nothing on stdout (the opening lines, progress).
void expect_refused_before_step_1(const std::string& args, const std::string& needle) {
  expect_refused(args, needle);
  const auto r = run(args);
  EXPECT_EQ(r.out, "") << args;
}

TEST(CliOutputs, TrainRefusesAnUnwritableSaveFolderBeforeStep1) {
  expect_refused_before_step_1(std::string(kTrain) + " --save /proc/zdp-x",
                               "[train] --save /proc/zdp-x: cannot create the folder");
  expect_refused_before_step_1(std::string(kTrain) + " --save /proc/self", "[train] --save /proc/self: cannot write");
  EXPECT_FALSE(fs::exists("/proc/zdp-x"));
}

TEST(CliOutputs, TrainRefusesAnUnwritableMetricsFileBeforeStep1) {
  expect_refused_before_step_1(std::string(kTrain) + " --metrics /proc/zdp-x/m.jsonl",
                               "[train] --metrics /proc/zdp-x/m.jsonl (in /proc/zdp-x): cannot create the folder");
}

TEST(CliOutputs, TrainRefusesASaveFolderUnderAFileAndKeepsTheMetrics) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_cli_outputs." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  std::ofstream(dir / "m.jsonl") << "{\"kept\":1}\n";
  expect_refused_before_step_1(
      std::string(kTrain) + " --save " + (dir / "file" / "ckpt").string() + " --metrics " + (dir / "m.jsonl").string(),
      "is a file, not a folder");
  std::ifstream in(dir / "m.jsonl");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), "{\"kept\":1}\n");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);  // no probe left behind
  fs::remove_all(dir);
}

// The other commands check their output before reading any input (the
// inputs here do not exist: the output is what they name).
TEST(CliOutputs, OtherCommandsCheckTheirOutputFirst) {
  expect_refused("tokenize /nonexistent.txt /proc/zdp-x/out.bin", "[tokenize] OUT /proc/zdp-x/out.bin");
  expect_refused("tokenize /nonexistent.txt /proc/zdp-x/out.bin --val-fraction 0.1",
                 "[tokenize] OUT /proc/zdp-x/out_train.bin");
  expect_refused("report /nonexistent.jsonl --out /proc/zdp-x/r.html", "[report] --out /proc/zdp-x/r.html");
  expect_refused("ckpt consolidate /nonexistent /proc/zdp-x/out", "[ckpt consolidate] OUT's folder /proc/zdp-x");
  expect_refused("ckpt reshard /nonexistent /proc/zdp-x/out --ranks 2", "[ckpt reshard] OUT's folder /proc/zdp-x");
}

}  // namespace
