// SPDX-License-Identifier: Apache-2.0
// A damaged or foreign checkpoint gives a clear error naming the file and
// the problem — never a crash and never a silently wrong load.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt/crc32c.h"
#include "ckpt/format.h"
#include "ckpt/manifest.h"
#include "ckpt/offline.h"
#include "ckpt_test_util.h"

namespace zerodp::ckpt::testing {
namespace {

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    const model::Mlp mlp(small_mlp());
    zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
      zero::Engine engine(mlp, comm, test_config(2), kSeed, kMicro, 1);
      std::vector<double> losses;
      train_steps(engine, kMicro, 2, losses);
      // 64-byte chunks: several per record.
      const std::string path = save(engine, dir_.path(), {.seed = kSeed, .chunk_bytes = 64}).path;
      if (comm.rank() == 0) saved_ = path;  // one writer: the ranks run as threads
    });
    shard1_ = saved_ + "/" + shard_file_name(1, 2);
  }

  // Loads at `ranks` ranks with `config`; returns the root-cause error, or
  // nullptr when the load succeeded.
  std::exception_ptr try_load(int ranks = 2, const zero::EngineConfig& config = test_config(2),
                              const model::MlpConfig& mlp_config = small_mlp()) {
    const model::Mlp mlp(mlp_config);
    try {
      comm::run_thread_ranks(ranks, zerodp::testing::test_comm_options(), [&](comm::Communicator& comm) {
        zero::Engine engine(mlp, comm, config, kSeed, kMicro, 1);
        load(engine, dir_.path());
      });
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  template <typename E>
  void expect_error(std::exception_ptr error, const std::string& file, const std::string& words) {
    ASSERT_TRUE(error) << "the load succeeded";
    try {
      std::rethrow_exception(error);
    } catch (const E& e) {
      EXPECT_NE(e.message().find(file), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(words), std::string::npos) << e.message();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong error type: " << e.what();
    }
  }

  TempDir dir_;
  std::string saved_;
  std::string shard1_;
};

TEST_F(Corruption, IntactCheckpointLoads) {
  EXPECT_FALSE(try_load());
  EXPECT_TRUE(inspect_checkpoint(dir_.path()).ok());
}

TEST_F(Corruption, FlippedPayloadByte) {
  auto bytes = read_bytes(shard1_);
  bytes[bytes.size() - 5] ^= 0x10;
  write_bytes(shard1_, bytes);
  expect_error<IoError>(try_load(), shard1_, "CRC32C");
  // At 3 ranks the damaged bytes are read by a different rank: still caught.
  expect_error<IoError>(try_load(3, test_config(0)), shard1_, "CRC32C");
  const InspectReport report = inspect_checkpoint(dir_.path());
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(report.files[0].ok);
  EXPECT_NE(report.files[1].problem.find("CRC32C"), std::string::npos) << report.files[1].problem;
}

TEST_F(Corruption, EveryFlippedByteOfAShardIsCaught) {
  const auto original = read_bytes(shard1_);
  const Manifest m = read_manifest(saved_);
  // Flip in place (no truncation), one byte at a time, and put it back.
  std::FILE* f = std::fopen(shard1_.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  auto put = [&](size_t at, char c) {
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    std::fputc(c, f);
    std::fflush(f);
  };
  for (size_t i = 0; i < original.size(); ++i) {
    put(i, static_cast<char>(original[i] ^ static_cast<char>(1u << (i % 8))));
    CheckpointReader reader(saved_, m);
    bool caught = false;
    try {
      for (size_t t = 0; t < m.tensors.size(); ++t) read_full_tensor(reader, t);
    } catch (const IoError& e) {
      caught = e.message().find(shard1_) != std::string::npos;
    }
    EXPECT_TRUE(caught) << "flipping byte " << i << " of " << original.size() << " went unnoticed";
    put(i, original[i]);
  }
  std::fclose(f);
  EXPECT_EQ(read_bytes(shard1_), original);
  EXPECT_FALSE(try_load());
}

TEST_F(Corruption, TruncatedShard) {
  auto bytes = read_bytes(shard1_);
  ASSERT_GT(bytes.size(), 3u);
  bytes.erase(bytes.end() - 3, bytes.end());
  write_bytes(shard1_, bytes);
  expect_error<IoError>(try_load(), shard1_, "truncated");
}

TEST_F(Corruption, MissingShard) {
  fs::remove(shard1_);
  expect_error<IoError>(try_load(), shard1_, "missing");
  const InspectReport report = inspect_checkpoint(dir_.path());
  EXPECT_NE(report.files[1].problem.find("missing"), std::string::npos);
}

TEST_F(Corruption, ShardOfAnotherSave) {
  // A second save of the same model elsewhere; swap one of its files in.
  TempDir other;
  const model::Mlp mlp(small_mlp());
  std::string other_path;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(2), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 2, losses);
    const std::string path = save(engine, other.path(), {.seed = kSeed, .chunk_bytes = 64}).path;
    if (comm.rank() == 0) other_path = path;
  });
  fs::copy_file(other_path + "/" + shard_file_name(1, 2), shard1_, fs::copy_options::overwrite_existing);
  expect_error<IoError>(try_load(), shard1_, "different save");
}

TEST_F(Corruption, DifferentModel) {
  model::MlpConfig wider = small_mlp();
  wider.widths[1] = 18;
  expect_error<ConfigError>(try_load(2, test_config(2), wider), "manifest.json", "different model");
  // Same sizes, different head: still a different model.
  model::MlpConfig regression = small_mlp();
  regression.head = model::MlpHead::kRegression;
  expect_error<ConfigError>(try_load(2, test_config(2), regression), "manifest.json", "different model");
}

TEST_F(Corruption, OptimizerKindMismatch) {
  zero::EngineConfig sgd = test_config(2);
  sgd.optimizer.kind = optim::OptimizerKind::kSgd;
  sgd.optimizer.sgd.momentum = 0.9;
  expect_error<ConfigError>(try_load(2, sgd), "manifest.json", "optimizer adamw");
  // Lion keeps exp_avg like AdamW, but not exp_avg_sq: the kind is refused first.
  expect_error<ConfigError>(try_load(2, lion_config(2)), "manifest.json", "this run uses lion");
}

// Rewrites the manifest through JSON with `edit`, re-sealing its CRC.
void edit_manifest(const std::string& dir, const std::function<void(nlohmann::ordered_json&)>& edit) {
  const std::string path = dir + "/manifest.json";
  const auto bytes = read_bytes(path);
  auto j = nlohmann::ordered_json::parse(std::string(bytes.begin(), bytes.end()));
  j.erase("manifest_crc32c");
  edit(j);
  const std::string body = j.dump();
  j["manifest_crc32c"] = crc32c(body.data(), body.size());
  const std::string text = j.dump(2);
  write_bytes(path, std::vector<char>(text.begin(), text.end()));
}

TEST_F(Corruption, FutureFormatVersion) {
  edit_manifest(saved_, [](auto& j) { j["format_version"] = kFormatVersion + 1; });
  expect_error<ConfigError>(try_load(), "manifest.json", "newer than this zerodp");
}

TEST_F(Corruption, ManifestByteFlip) {
  const std::string path = saved_ + "/manifest.json";
  auto bytes = read_bytes(path);
  const size_t at = std::string(bytes.begin(), bytes.end()).find("\"steps\": 2");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 9] = '3';
  write_bytes(path, bytes);
  expect_error<IoError>(try_load(), path, "CRC32C");
}

TEST_F(Corruption, ManifestSizeDisagreesWithTheFile) {
  edit_manifest(saved_,
                [](auto& j) { j["shards"][1]["bytes"] = j["shards"][1]["bytes"].template get<uint64_t>() + 4; });
  expect_error<IoError>(try_load(), "manifest.json", "inconsistent");
}

TEST_F(Corruption, LatestPointsNowhere) {
  fs::remove_all(saved_);
  expect_error<IoError>(try_load(), "latest", "missing or incomplete");
  fs::remove(dir_ / "latest");
  expect_error<ConfigError>(try_load(), dir_.path(), "holds no checkpoint");
}

TEST_F(Corruption, PathDoesNotExist) {
  const model::Mlp mlp(small_mlp());
  try {
    comm::run_thread_ranks(1, {}, [&](comm::Communicator& comm) {
      zero::Engine engine(mlp, comm, test_config(0), kSeed, kMicro, 1);
      load(engine, dir_ / "nope");
    });
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("does not exist"), std::string::npos);
  }
}

}  // namespace
}  // namespace zerodp::ckpt::testing
