// SPDX-License-Identifier: Apache-2.0
// train/output_preflight.h: an output that cannot be written is refused
// before the work starts, in one ConfigError line naming it and the fix;
// --save needs room for two checkpoints (the free space through the seam);
// a check leaves nothing behind but the folders it created.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/presets.h"
#include "plan/checkpoint_size.h"
#include "support/scratch_dir.h"
#include "train/memory_check.h"
#include "train/output_preflight.h"

namespace zerodp::train {
namespace {

namespace fs = std::filesystem;

class OutputPreflight : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("zerodp_preflight." + std::to_string(getpid()) + "." +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Every entry under root_, as relative paths.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root_)) out.push_back(fs::relative(e.path(), root_).string());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path root_;
};

// The ConfigError's message (one line), or "" when it passed.
template <typename F>
std::string refusal(F&& check) {
  try {
    check();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message().find('\n'), std::string::npos) << e.message();
    return e.message();
  }
  return "";
}

TEST_F(OutputPreflight, CreatesAMissingFolderAndLeavesNoProbe) {
  const fs::path dir = root_ / "a" / "b";
  check_writable_folder(dir, "[train] --save");
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(entries(), (std::vector<std::string>{"a", "a/b"}));  // the folders it made, no probe file
  check_writable_folder(dir, "[train] --save");                  // again: an existing folder
  EXPECT_EQ(entries(), (std::vector<std::string>{"a", "a/b"}));
}

TEST_F(OutputPreflight, RefusesAPathUnderARegularFile) {
  std::ofstream(root_ / "file") << "x";
  const std::string m = refusal([&] { check_writable_folder(root_ / "file" / "ckpt", "[train] --save"); });
  EXPECT_NE(m.find("[train] --save "), std::string::npos) << m;
  EXPECT_NE(m.find("is a file, not a folder"), std::string::npos) << m;
  EXPECT_NE(m.find("Not a directory"), std::string::npos) << m;
  const std::string f = refusal([&] { check_writable_file(root_ / "file" / "m.jsonl", "[train] --metrics"); });
  EXPECT_NE(f.find("[train] --metrics "), std::string::npos) << f;
  EXPECT_NE(f.find("is a file, not a folder"), std::string::npos) << f;
  // The path itself a file where a folder is wanted, and a folder where a file is.
  EXPECT_NE(refusal([&] { check_writable_folder(root_ / "file", "[train] --save"); }).find("is a file"),
            std::string::npos);
  EXPECT_NE(refusal([&] { check_writable_file(root_, "[train] --metrics"); }).find("is a folder, not a file"),
            std::string::npos);
  EXPECT_EQ(entries(), (std::vector<std::string>{"file"}));
}

// /proc refuses new entries to root too (permission bits would not).
TEST_F(OutputPreflight, RefusesAnUnwritableLocation) {
  const std::string m = refusal([] { check_writable_folder("/proc/zdp-preflight-x", "[train] --save"); });
  EXPECT_NE(m.find("[train] --save /proc/zdp-preflight-x: cannot create the folder"), std::string::npos) << m;
  EXPECT_NE(m.find("give a folder this process can write"), std::string::npos) << m;
  // An existing folder that takes no new file: the probe finds it.
  const std::string p = refusal([] { check_writable_folder("/proc/self", "[train] --save"); });
  EXPECT_NE(p.find("[train] --save /proc/self: cannot write in this folder"), std::string::npos) << p;
  EXPECT_NE(refusal([] {
              check_writable_file("/proc/zdp-preflight-x/m.jsonl", "[train] --metrics");
            }).find("[train] --metrics"),
            std::string::npos);
  EXPECT_FALSE(fs::exists("/proc/zdp-preflight-x"));
}

TEST_F(OutputPreflight, AnExistingFileIsNotTruncated) {
  const fs::path metrics = root_ / "m.jsonl";
  std::ofstream(metrics) << "{\"kept\":1}\n";
  check_writable_file(metrics, "[train] --metrics");
  std::ifstream in(metrics);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), "{\"kept\":1}\n");
  EXPECT_EQ(entries(), (std::vector<std::string>{"m.jsonl"}));
  check_writable_file(root_ / "new" / "m.jsonl", "[train] --metrics");  // its folder made, the file not
  EXPECT_EQ(entries(), (std::vector<std::string>{"m.jsonl", "new"}));
}

TEST_F(OutputPreflight, SaveNeedsRoomForTwoCheckpoints) {
  const uint64_t checkpoint = 100 << 20;
  const auto free_is = [](uint64_t bytes) { return [bytes](const fs::path&) { return bytes; }; };
  const std::string m =
      refusal([&] { check_save_folder(root_ / "ckpt", checkpoint, "[train] --save", free_is(2 * checkpoint - 1)); });
  EXPECT_NE(m.find("[train] --save "), std::string::npos) << m;
  EXPECT_NE(m.find("two checkpoints of this run need 200.00 MiB (100.00 MiB each"), std::string::npos) << m;
  EXPECT_NE(m.find("free space there or give a folder on a larger filesystem"), std::string::npos) << m;
  EXPECT_EQ(refusal([&] { check_save_folder(root_ / "ckpt", checkpoint, "[train] --save", free_is(2 * checkpoint)); }),
            "");
  EXPECT_EQ(entries(), (std::vector<std::string>{"ckpt"}));
  EXPECT_GT(filesystem_free_bytes(root_), 0u);  // the real figure (statvfs)
}

TEST_F(OutputPreflight, TrainOutputsUseThePlannedCheckpointBytes) {
  TrainConfig config;
  config.ranks = 2;
  config.save_dir = (root_ / "ckpt").string();
  config.metrics_path = (root_ / "m.jsonl").string();
  const model::ModelConfig model = model::resolve_model_config("gpt-tiny");
  const uint64_t one = plan::checkpoint_bytes(model, config.engine.optimizer, 2);
  fs::path asked;
  const auto free_is = [&asked](uint64_t bytes) {
    return [bytes, &asked](const fs::path& dir) {
      asked = dir;
      return bytes;
    };
  };
  EXPECT_NE(refusal([&] { check_train_outputs(config, model, free_is(2 * one - 1)); }).find("two checkpoints"),
            std::string::npos);
  EXPECT_EQ(asked, root_ / "ckpt");
  EXPECT_EQ(refusal([&] { check_train_outputs(config, model, free_is(2 * one)); }), "");
  EXPECT_EQ(entries(), (std::vector<std::string>{"ckpt"}));  // no metrics file before the run writes one
  config.metrics_path = "/proc/zdp-preflight-x/m.jsonl";
  EXPECT_NE(refusal([&] { check_train_outputs(config, model, free_is(2 * one)); }).find("[train] --metrics"),
            std::string::npos);
}

// --offload-optimizer's directory: a missing one and one without room for
// this process's ranks' files are refused in one line before the run.
TEST(OffloadRoom, AMissingDirectoryOrTooLittleSpaceIsRefused) {
  const testing::ScratchDir dir("offload_room");
  TrainConfig config;
  config.engine.offload_optimizer_dir = dir.path.string();
  plan::ProcessPrediction process;
  process.ranks.resize(2);
  process.ranks[0].disk = process.ranks[1].disk = 1 << 20;
  process.ranks[1].disk = uint64_t{1} << 60;  // an exabyte
  try {
    check_offload_room(config, process);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[--offload-optimizer] " + dir.path.string() + " has "), std::string::npos) << what;
    EXPECT_NE(what.find("free some space or give a directory on a larger disk"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  config.engine.offload_optimizer_dir = (dir.path / "missing").string();
  EXPECT_THROW(check_offload_room(config, process), ConfigError);
}

// --offload-params: its own directory is checked for the parameter files
// alone; one directory for both flags must hold both files.
TEST(OffloadRoom, TheParameterFilesAreCheckedWhereTheyGo) {
  const testing::ScratchDir dir("offload_room_params");
  TrainConfig config;
  config.engine.offload_params_dir = dir.path.string();
  plan::ProcessPrediction process;
  process.ranks.resize(1);
  process.ranks[0].disk = uint64_t{1} << 60;  // the states' file: an exabyte
  process.ranks[0].param_disk = 1 << 20;
  process.ranks[0].disk += process.ranks[0].param_disk;
  EXPECT_NO_THROW(check_offload_room(config, process)) << "the states are in RAM";
  config.engine.offload_optimizer_dir = dir.path.string();
  try {
    check_offload_room(config, process);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer states and parameter shards"), std::string::npos) << e.what();
  }
  config.engine.offload_optimizer_dir.clear();
  config.engine.offload_params_dir = (dir.path / "missing").string();
  try {
    check_offload_room(config, process);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("[--offload-params]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zerodp::train
