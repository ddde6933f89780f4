// SPDX-License-Identifier: Apache-2.0
// Damaged or foreign files given to the CLI: checkpoints to `zerodp train
// --resume` and to the `zerodp ckpt` tools, llm.c token shards to `--data`.
// Each is refused with exit code 2 and one line naming the file and the
// problem, and nothing on disk changes: the checkpoint directory keeps every
// byte, no metrics file or output directory appears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;
using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::run;

using Snapshot = std::map<std::string, std::string>;  // relative path -> bytes

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Snapshot snapshot(const fs::path& dir) {
  Snapshot s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    s[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? read_all(e.path()) : "<dir>";
  }
  return s;
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A 2-rank stage 2 checkpoint of 2 steps, made once per test process.
class DamagedCheckpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("zerodp_cli_files." + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const auto r = run("train " + std::string(kRun) + " --steps 2 --save " + (root_ / "good").string());
    ASSERT_EQ(r.code, 0) << r.err;
    good_validation_ = validation_line(r.out);
    ASSERT_FALSE(good_validation_.empty()) << r.out;
  }
  // "validation loss 1.2345" of the run's final line about it.
  static std::string validation_line(const std::string& out) {
    const size_t at = out.rfind("validation loss ");
    return at == std::string::npos ? "" : out.substr(at, std::string("validation loss 1.2345").size());
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A fresh copy of the good checkpoint to damage.
  fs::path copy(const std::string& name) {
    const fs::path dir = root_ / name;
    fs::remove_all(dir);
    fs::copy(root_ / "good", dir, fs::copy_options::recursive);
    return dir;
  }
  static fs::path step_dir(const fs::path& dir) { return dir / "step-00000002"; }

  // `train --resume DIR --save DIR` is refused naming `needle`; DIR is
  // byte-for-byte what it was and no metrics file is written.
  void expect_resume_refused(const fs::path& dir, const std::string& needle, const std::string& extra = "") {
    const Snapshot before = snapshot(dir);
    const fs::path metrics = root_ / ("never." + dir.filename().string() + ".jsonl");
    expect_refused("train " + std::string(kRun) + " --steps 4 --resume " + dir.string() + " --save " + dir.string() +
                       " --metrics " + metrics.string() + extra,
                   needle);
    EXPECT_TRUE(snapshot(dir) == before) << "a refused resume changed " << dir;
    EXPECT_FALSE(fs::exists(metrics));
  }

  static constexpr const char* kRun =
      "--ranks 2 --stage 2 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0";
  static fs::path root_;
  static std::string good_validation_;
};
fs::path DamagedCheckpoints::root_;
std::string DamagedCheckpoints::good_validation_;

TEST_F(DamagedCheckpoints, TheGoodOneResumes) {
  const fs::path dir = copy("good-copy");
  const auto r = run("train " + std::string(kRun) + " --steps 3 --resume " + dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(DamagedCheckpoints, FlippedShardByte) {
  const fs::path dir = copy("flipped");
  const fs::path shard = step_dir(dir) / "shard-00001-of-00002.bin";
  std::string bytes = read_all(shard);
  bytes[bytes.size() / 2] ^= 0x10;
  write_all(shard, bytes);
  expect_resume_refused(dir, "shard-00001-of-00002.bin");
}

TEST_F(DamagedCheckpoints, TruncatedShard) {
  const fs::path dir = copy("truncated");
  const fs::path shard = step_dir(dir) / "shard-00000-of-00002.bin";
  fs::resize_file(shard, fs::file_size(shard) - 1000);
  expect_resume_refused(dir, "truncated");
}

TEST_F(DamagedCheckpoints, MissingShard) {
  const fs::path dir = copy("missing");
  fs::remove(step_dir(dir) / "shard-00001-of-00002.bin");
  expect_resume_refused(dir, "shard-00001-of-00002.bin");
}

TEST_F(DamagedCheckpoints, EditedManifest) {
  const fs::path dir = copy("manifest");
  const fs::path manifest = step_dir(dir) / "manifest.json";
  std::string text = read_all(manifest);
  const size_t at = text.find("\"step\"");
  ASSERT_NE(at, std::string::npos);
  text[text.find_first_of("0123456789", at)] = '7';
  write_all(manifest, text);
  expect_resume_refused(dir, "manifest.json");
}

TEST_F(DamagedCheckpoints, LatestNamesNothing) {
  const fs::path dir = copy("latest");
  write_all(dir / "latest", "step-00000099\n");
  expect_resume_refused(dir, "latest names step-00000099, which is missing");
}

TEST_F(DamagedCheckpoints, AnotherModelOrOptimizer) {
  const fs::path dir = copy("foreign");
  expect_resume_refused(dir, "saved from a different model", " --model gpt-10m");
  expect_resume_refused(dir, "--optimizer sgd contradicts the checkpoint", " --optimizer sgd");
  expect_resume_refused(dir, "saved with optimizer adamw, this run uses sgd",
                        " --optimizer sgd --resume-override optimizer");
}

TEST_F(DamagedCheckpoints, NoSuchDirectory) {
  expect_refused("train --resume " + (root_ / "nowhere").string(), "does not exist");
}

TEST_F(DamagedCheckpoints, CkptToolsRefuseAndWriteNothing) {
  const fs::path dir = copy("tools");
  const fs::path shard = step_dir(dir) / "shard-00000-of-00002.bin";
  std::string bytes = read_all(shard);
  bytes[bytes.size() - 7] ^= 0x01;
  write_all(shard, bytes);
  const Snapshot before = snapshot(dir);
  expect_refused("ckpt inspect " + dir.string(), "damaged");
  // --optimizer-states: plain consolidate reads (and checks) only the weights.
  expect_refused("ckpt consolidate --optimizer-states " + dir.string() + " " + (root_ / "consolidated").string(),
                 "shard-00000-of-00002.bin");
  expect_refused("ckpt reshard " + dir.string() + " " + (root_ / "resharded").string() + " --ranks 3",
                 "shard-00000-of-00002.bin");
  EXPECT_TRUE(snapshot(dir) == before);
  for (const char* out : {"consolidated", "consolidated.tmp", "resharded", "resharded.tmp"}) {
    EXPECT_FALSE(fs::exists(root_ / out)) << "a refused tool left " << out;
  }
}

// --init-from: the weights `ckpt consolidate` wrote from the good checkpoint,
// in each of the three formats it reads (told apart by content: one copy of
// the HF file has neither its name nor a config.json beside it). (That every stage starts from
// exactly these weights is tests/zero/engine_test.cc's
// SetMasterParamsStartsEveryStageFromTheGivenWeights.)
TEST_F(DamagedCheckpoints, InitFromEveryWeightsFormat) {
  const fs::path out = root_ / "weights";
  fs::remove_all(out);
  ASSERT_EQ(run("ckpt consolidate " + (root_ / "good").string() + " " + out.string()).code, 0);
  const fs::path bin = out / "model.bin";
  fs::copy_file(out / "hf/model.safetensors", out / "hf-weights");  // no config.json beside it
  const struct {
    fs::path file;
    const char* format;
  } files[] = {{bin, "(llm.c model file)"},
               {out / "model.safetensors", "(zerodp safetensors)"},
               {out / "hf-weights", "(Hugging Face GPT-2 safetensors, without config.json"},
               {out / "hf/model.safetensors", "(Hugging Face GPT-2 safetensors, with "}};
  for (const auto& f : files) {
    // One step at a negligible learning rate: the final validation loss is
    // the saved run's, so the weights are the ones it ended with.
    const auto r = run("train " + std::string(kRun) + " --steps 1 --lr 1e-12 --init-from " + f.file.string());
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("initialised from " + f.file.string() + " " + f.format), std::string::npos) << r.out;
    EXPECT_EQ(validation_line(r.out), good_validation_) << f.file << "\n" << r.out;
  }
  // GPT-2's layout in BF16 shards with their index, as the Llama family's:
  // --init-from takes the directory.
  const fs::path out16 = root_ / "weights16";
  fs::remove_all(out16);
  ASSERT_EQ(run("ckpt consolidate " + (root_ / "good").string() + " " + out16.string() +
                " --no-llmc --hf-dtype bf16 --hf-max-shard-size 100KB")
                .code,
            0);
  EXPECT_TRUE(fs::exists(out16 / "hf/model.safetensors.index.json"));
  const auto from16 =
      run("train " + std::string(kRun) + " --steps 1 --lr 1e-12 --init-from " + (out16 / "hf").string());
  EXPECT_EQ(from16.code, 0) << from16.err;
  EXPECT_NE(from16.out.find("initialised from " + (out16 / "hf").string() + " (Hugging Face GPT-2 safetensors, with "),
            std::string::npos)
      << from16.out;

  const fs::path metrics = root_ / "never.init.jsonl";
  const std::string m = " --metrics " + metrics.string();
  const std::string hf = (out / "hf/model.safetensors").string();
  expect_refused("train --init-from " + bin.string() + " --model gpt-10m" + m, "--model '{\"kind\":\"gpt\"");
  expect_refused("train --init-from " + hf + " --model gpt-10m" + m,
                 hf + " (Hugging Face GPT-2 safetensors, with config.json) holds a gpt L=4 NH=4 C=128 V=256");
  expect_refused("train --init-from " + bin.string() + " --resume " + (root_ / "good").string() + m,
                 "--init-from and --resume");
  expect_refused("train --init-from " + (root_ / "no-such.bin").string() + m, "no-such.bin");
  std::string bytes = read_all(bin);
  write_all(root_ / "short.bin", bytes.substr(0, bytes.size() - 4));
  expect_refused("train --init-from " + (root_ / "short.bin").string() + m, "short.bin");
  bytes[0] ^= 0x01;  // the magic number
  write_all(root_ / "magic.bin", bytes);
  expect_refused("train --init-from " + (root_ / "magic.bin").string() + m, "bad magic");
  const std::string st = read_all(hf);
  write_all(root_ / "short.safetensors", st.substr(0, st.size() - 1000));
  expect_refused("train --init-from " + (root_ / "short.safetensors").string() + m, "truncated");
  const fs::path manifest = step_dir(root_ / "good") / "manifest.json";
  expect_refused("train --init-from " + manifest.string() + m, "not a weights file");
  EXPECT_FALSE(fs::exists(metrics)) << "a refused run wrote its metrics file";
}

// The committed HF fixture (tests/ckpt/fixtures/hf_gpt2, which
// tests/ckpt/hf_test.cc checks against torch) is what zerodp writes: the
// same training run and consolidate, from the arguments the fixture records,
// give the same config.json and safetensors header, and weights equal up to
// the last bits of BLAS rounding (bitwise with the OpenBLAS kernel that made
// the fixture; another kernel sums in another order).
TEST(CliFiles, HfFixtureIsWhatZerodpWrites) {
  const fs::path fixture = ZERODP_HF_FIXTURE_DIR;
  const nlohmann::json ref = nlohmann::json::parse(read_all(fixture / "logits.json"));
  std::string args;
  for (const auto& a : ref.at("zerodp_train")) args += " '" + a.get<std::string>() + "'";
  const fs::path dir = fs::temp_directory_path() / ("zerodp_cli_hf." + std::to_string(getpid()));
  fs::remove_all(dir);
  auto r = run("train" + args + " --save " + (dir / "ckpt").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("ckpt consolidate " + (dir / "ckpt").string() + " " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_all(dir / "out/hf/config.json"), read_all(fixture / "config.json"));
  const std::string got = read_all(dir / "out/hf/model.safetensors"), want = read_all(fixture / "model.safetensors");
  ASSERT_EQ(got.size(), want.size());
  uint64_t header = 0;
  std::memcpy(&header, want.data(), 8);
  EXPECT_EQ(got.substr(0, 8 + header), want.substr(0, 8 + header));
  double diff = 0, scale = 0;
  for (size_t at = 8 + header; at + 4 <= want.size(); at += 4) {
    float a = 0, b = 0;
    std::memcpy(&a, got.data() + at, 4);
    std::memcpy(&b, want.data() + at, 4);
    diff = std::max(diff, std::abs(double(a) - b));
    scale = std::max(scale, std::abs(double(b)));
  }
  EXPECT_LE(diff, 1e-5 * scale);
  std::printf("export vs fixture: %s (max |difference| %.3g, max |weight| %.3g)\n",
              got == want ? "bitwise identical" : "within tolerance", diff, scale);
  fs::remove_all(dir);
}

// llm.c token shards: int32 header[256] = {20240520, 1, count}, then count
// uint16 tokens.
std::string token_shard(int32_t magic, int32_t version, int32_t count, size_t tokens) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = count;
  std::string bytes(reinterpret_cast<const char*>(header.data()), header.size() * sizeof(int32_t));
  for (size_t i = 0; i < tokens; ++i) bytes += std::string("\x01\x00", 2);
  return bytes;
}

TEST(CliFiles, TrainRefusesBadTokenShards) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_cli_shards." + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path metrics = dir / "never.jsonl";
  const struct {
    const char* name;
    std::string bytes;
    const char* needle;
  } cases[] = {
      {"magic_train.bin", token_shard(12345, 1, 4096, 4096), "bad magic 12345"},
      {"version_train.bin", token_shard(20240520, 7, 4096, 4096), "version 7"},
      {"negative_train.bin", token_shard(20240520, 1, -5, 0), "negative token count"},
      {"short_train.bin", token_shard(20240520, 1, 4096, 4000), "header says 4096 tokens"},
      {"headless_train.bin", std::string(100, '\0'), "header"},
  };
  for (const auto& c : cases) {
    const fs::path p = dir / c.name;
    write_all(p, c.bytes);
    expect_refused("train --data " + p.string() + " --metrics " + metrics.string(), c.needle);
    expect_refused("train --data " + p.string(), c.name);
  }
  // A good training shard with a damaged validation shard.
  write_all(dir / "good_train.bin", token_shard(20240520, 1, 8192, 8192));
  write_all(dir / "good_val.bin", token_shard(20240520, 1, 4096, 10));
  expect_refused("train --data " + (dir / "good_train.bin").string() + " --metrics " + metrics.string(),
                 "good_val.bin");
  EXPECT_FALSE(fs::exists(metrics)) << "a refused run wrote its metrics file";
  fs::remove_all(dir);
}

}  // namespace
