// SPDX-License-Identifier: Apache-2.0
// A user's workflow through the zerodp executable: what a run says about
// itself (step counts, metrics, the effective configuration), resumes, and
// the behaviours issue 14's trial asked for. Small runs of the default tiny
// GPT on the embedded corpus, a few steps each.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "cli_run.h"
#include "support/scoped_env.h"

namespace zerodp::cli_testing {
namespace {

const char* const kQuick = "--ranks 2 --sample-tokens 0 --held-out 0 --log-every 1";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

TEST(Workflow, SkippedFp16StepsCountAndAreMarked) {
  // A loss scale of 2^40 overflows for the first steps: the progress line
  // used to count only applied steps and never reached 10/10.
  const fs::path config =
      write_temp("zerodp_workflow_fp16.json", R"({"fp16":{"enabled":true,"initial_scale_power":40}})");
  const fs::path metrics = fs::temp_directory_path() / "zerodp_workflow_fp16.jsonl";
  const Result r =
      run(fmt::format("train --config {} --steps 10 {} --metrics {}", config.string(), kQuick, metrics.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step  1/10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 10/10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped (fp16 overflow"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the steps were skipped"), std::string::npos) << r.out;
  int skipped = 0, steps = 0;
  for (const std::string& line : lines_of(take_file(metrics))) {
    if (line.find("\"step\":") == std::string::npos) continue;
    ++steps;
    if (line.find("\"skipped\":true") != std::string::npos) ++skipped;
  }
  EXPECT_GE(steps, 10);
  EXPECT_GT(skipped, 0);
  fs::remove(config);
}

// "step N/N | loss X": the last step's line up to the loss.
std::string last_step_line(const std::string& out, int steps) {
  const std::string key = fmt::format("step {}/{} |", steps, steps);
  const size_t at = out.find(key);
  if (at == std::string::npos) return "";
  return out.substr(at, out.find(" | ", out.find("loss", at)) - at);
}

TEST(Workflow, AnIgnoredValDataIsWarnedAbout) {
  const fs::path text = write_temp("zerodp_workflow_val.txt", std::string(4000, 'a'));
  const Result r = run(fmt::format("train --data {} --val-data other.bin --steps 1 {}", text.string(), kQuick));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--val-data other.bin is ignored: text data is validated on its last 10%"), std::string::npos)
      << r.err;
  const Result embedded = run(fmt::format("train --val-data other.bin --steps 1 {}", kQuick));
  EXPECT_NE(embedded.err.find("--val-data other.bin is ignored: the embedded corpus"), std::string::npos)
      << embedded.err;
  fs::remove(text);
}

TEST(Workflow, TheSampleTakesAPromptAndATemperature) {
  const Result r =
      run("train --steps 2 --ranks 2 --held-out 0 --eval-every 0 --prompt 'hello 1+2=' --temperature 0 "
          "--top-k 5 --sample-tokens 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Sample (4 tokens, temperature 0, top-k 5):\nhello 1+2="), std::string::npos) << r.out;
  expect_refused("train --temperature -0.5", "--temperature -0.5 must be >= 0");
  expect_refused("train --top-k -1", "--top-k -1 must be >= 0");
}

TEST(Workflow, VersionMetricsAndCheckpointsTellWhatReproducesARun) {
  const Result v = run("--version");
  ASSERT_EQ(v.code, 0) << v.err;
  for (const char* line : {"zerodp ", "SIMD levels this CPU runs:", "commit:", "compiler:", "build:", "simd:", "cpu:",
                           "openblas:", "mpi:"}) {
    EXPECT_NE(v.out.find(line), std::string::npos) << line << "\n" << v.out;
  }
  const fs::path dir = fs::temp_directory_path() / ("zerodp_workflow_facts." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Result r = run(fmt::format("train --steps 1 {} --metrics {} --save {}", kQuick, (dir / "m.jsonl").string(),
                                   (dir / "ckpt").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string first = lines_of(take_file(dir / "m.jsonl")).front();
  for (const char* key : {"\"build\":{", "\"commit\":", "\"cpu\":", "\"openblas\":", "\"simd\":"}) {
    EXPECT_NE(first.find(key), std::string::npos) << key << "\n" << first;
  }
  std::ifstream manifest(dir / "ckpt" / "step-00000001" / "manifest.json");
  const std::string m{std::istreambuf_iterator<char>(manifest), std::istreambuf_iterator<char>()};
  for (const char* key : {"\"build.commit\"", "\"build.cpu\"", "\"build.openblas\"", "\"build.mpi\""}) {
    EXPECT_NE(m.find(key), std::string::npos) << key;
  }
  fs::remove_all(dir);
}

// A kernel the user chose is recorded as chosen (a run's bits depend on the
// kernel), and gets no advice; Sandybridge is in every x86-64 OpenBLAS.
TEST(Workflow, TheRunFactsSayWhoChoseOpenBlasKernel) {
#if defined(__x86_64__)
  const zerodp::testing::ScopedEnv kernel("OPENBLAS_CORETYPE", "Sandybridge");
  const Result v = run("--version");
  const Result t = run(fmt::format("train --steps 1 {}", kQuick));
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("(core Sandybridge; OPENBLAS_CORETYPE=Sandybridge)"), std::string::npos) << v.out;
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("OpenBLAS Sandybridge kernels"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("note: OpenBLAS"), std::string::npos) << t.out;
#else
  GTEST_SKIP() << "OpenBLAS's x86-64 kernel names";
#endif
}

// Lion through the CLI: its flags, the effective configuration, K = 8 in the
// memory summary, and a resume that takes the optimizer and its settings
// from the checkpoint and ends on the straight run's loss.
TEST(Workflow, LionTrainsAndResumesAsSaved) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_workflow_lion." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string lion = "--optimizer lion --lr 3e-4 --betas 0.95,0.98 --weight-decay 0.2 --eval-every 0";
  const Result r =
      run(fmt::format("train {} --steps 4 --save-every 2 --save {} {}", lion, (dir / "ckpt").string(), kQuick));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("optimizer lion, lr 0.0003, betas [0.95,0.98], weight-decay 0.2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("K = 8"), std::string::npos) << r.out;
  std::ifstream manifest(dir / "ckpt" / "step-00000002" / "manifest.json");
  const std::string m{std::istreambuf_iterator<char>(manifest), std::istreambuf_iterator<char>()};
  EXPECT_NE(m.find(R"("kind": "lion")"), std::string::npos) << m;
  EXPECT_NE(m.find(R"("tensors": [)"), std::string::npos) << m;
  EXPECT_EQ(m.find("exp_avg_sq"), std::string::npos) << m;
  const std::string step2 = (dir / "ckpt" / "step-00000002").string();
  const Result resumed = run(fmt::format("train --resume {} {} --eval-every 0", step2, kQuick));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("optimizer lion, lr 0.0003, betas [0.95,0.98], weight-decay 0.2"), std::string::npos)
      << resumed.out;
  EXPECT_NE(resumed.out.find("taken from the checkpoint"), std::string::npos) << resumed.out;
  EXPECT_EQ(last_step_line(resumed.out, 4), last_step_line(r.out, 4)) << resumed.out;
  expect_refused(fmt::format("train --resume {} --betas 0.9,0.99", step2), "--resume-override betas");
  expect_refused(fmt::format("train --resume {} --optimizer adamw", step2), "--optimizer adamw contradicts");
  fs::remove_all(dir);
}

// The compressed collectives' block is a setting of the run: printed,
// recorded in the checkpoint, kept by a resume, and refused when a resume
// contradicts it.
TEST(Workflow, TheQuantizeBlockIsRecordedAndKeptOnResume) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_workflow_qblock." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string quantized = "--stage 3 --quantize-weights --quantize-grads --eval-every 0";
  const Result r = run(fmt::format("train {} --quantize-block 64 --steps 4 --save-every 2 --save {} {}", quantized,
                                   (dir / "ckpt").string(), kQuick));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("quantize-block 64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a 4-byte scale per 64 elements"), std::string::npos) << r.out;
  std::ifstream manifest(dir / "ckpt" / "step-00000002" / "manifest.json");
  const std::string m{std::istreambuf_iterator<char>(manifest), std::istreambuf_iterator<char>()};
  EXPECT_NE(m.find(R"(\"quantize-block\":64)"), std::string::npos) << m;
  const std::string step2 = (dir / "ckpt" / "step-00000002").string();
  const Result resumed = run(fmt::format("train --resume {} --eval-every 0 {}", step2, kQuick));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("quantize-block 64"), std::string::npos) << resumed.out;
  EXPECT_EQ(last_step_line(resumed.out, 4), last_step_line(r.out, 4)) << resumed.out;
  expect_refused(fmt::format("train --resume {} --ranks 2 --quantize-block 256", step2),
                 "--resume-override quantize-block");
  fs::remove_all(dir);
}

// --optimizer sgd without --lr trains at the schedule's peak, and the
// effective configuration (and the checkpoint) now say so: they used to show
// SgdConfig's 0.01. --help's --momentum default is the one a run gets (it
// showed 0.9 while the run was plain SGD).
TEST(Workflow, SgdShowsTheRateAndMomentumItTrainsWith) {
  const Result r = run(fmt::format("train --optimizer sgd --steps 1 --eval-every 0 {}", kQuick));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("lr 0.0015,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("momentum 0.0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("K = 4"), std::string::npos) << r.out;  // bf16: the fp32 master only
  const Result m = run(fmt::format("train --optimizer sgd --momentum 0.9 --steps 1 --eval-every 0 {}", kQuick));
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("K = 8"), std::string::npos) << m.out;
  const Result help = run("train --help");
  EXPECT_NE(help.out.find("--momentum FLOAT=0 "), std::string::npos) << help.out;
}

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zerodp_workflow_resume." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    data_ = dir_ / "text.txt";
    std::string text;
    for (int i = 0; i < 300; ++i) text += "a line of text to learn, number " + std::to_string(i % 17) + "\n";
    std::ofstream(data_) << text;
    const Result r = run(fmt::format("train --data {} --steps 6 --save-every 3 --save {} --eval-every 0 {}",
                                     data_.string(), (dir_ / "ckpt").string(), kQuick));
    ASSERT_EQ(r.code, 0) << r.err;
    straight_ = last_step_line(r.out, 6);
    ASSERT_FALSE(straight_.empty()) << r.out;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string step3() const { return (dir_ / "ckpt" / "step-00000003").string(); }

  fs::path dir_, data_;
  std::string straight_;
};

TEST_F(Resume, TakesModelDataAndStepsFromTheCheckpoint) {
  // No --data, no --steps: it used to train on the embedded corpus.
  const Result r = run(fmt::format("train --resume {} {} --eval-every 0", step3(), kQuick));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("taken from the checkpoint"), std::string::npos) << r.out;
  EXPECT_EQ(last_step_line(r.out, 6), straight_) << r.out;
}

TEST_F(Resume, AContradictingFlagIsRefusedUnlessOverridden) {
  expect_refused(fmt::format("train --resume {} --lr 0.01", step3()), "--resume-override lr");
  expect_refused(fmt::format("train --resume {} --resume-override lrr", step3()),
                 "--resume-override lrr: no such setting; the names are model, data,");
  const Result r = run(fmt::format("train --resume {} --lr 0.01 --resume-override lr {}", step3(), kQuick));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("overridden (--resume-override): lr 0.01"), std::string::npos) << r.out;
}

TEST_F(Resume, AChangedDataFileIsNamed) {
  std::ofstream(data_, std::ios::app) << "one more line\n";
  expect_refused(fmt::format("train --resume {}", step3()), "has changed since the checkpoint");
}

// llm.c shard: 256 int32 header (magic 20240520, version 1, token count), uint16 tokens.
void write_shard(const fs::path& path, int tokens, int salt) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = tokens;
  std::vector<uint16_t> ids(static_cast<size_t>(tokens));
  for (int i = 0; i < tokens; ++i) ids[static_cast<size_t>(i)] = static_cast<uint16_t>((i * 7 + salt) % 200);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 256 * 4);
  out.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * 2));
}

TEST_F(Resume, AGlobOfShardsIsRecordedAndAChangedShardNamed) {
  for (int k = 0; k < 2; ++k) write_shard(dir_ / fmt::format("s_train_{:03}.bin", k), 3000, k);
  write_shard(dir_ / "s_val_000.bin", 600, 9);
  const std::string glob = (dir_ / "s_train_*.bin").string();
  const Result r = run(
      fmt::format("train --data '{}' --steps 2 --eval-every 0 --save {} {}", glob, (dir_ / "shards").string(), kQuick));
  ASSERT_EQ(r.code, 0) << r.err;  // a glob used to be read as one file name
  write_shard(dir_ / "s_train_001.bin", 3000, 5);
  expect_refused(fmt::format("train --resume {} --steps 4", (dir_ / "shards").string()),
                 "has changed since the checkpoint");
}

TEST_F(Resume, AnotherRankCountKeepsTheGlobalBatch) {
  // Saved by 2 ranks x 1 micro-batch: 1 rank resumes it with 2 micro-batches a step.
  const Result r =
      run(fmt::format("train --resume {} --ranks 1 --sample-tokens 0 --held-out 0 --eval-every 0", step3()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("grad-accum 2 (the checkpoint's 2 micro-batches per step over 1 rank)"), std::string::npos)
      << r.out;
  expect_refused(fmt::format("train --resume {} --ranks 4", step3()), "which 4 ranks cannot share evenly");
}

TEST_F(Resume, NothingLeftToTrainIsRefused) {
  expect_refused(fmt::format("train --resume {} --steps 3", step3()), "nothing to train");
  expect_refused(fmt::format("train --resume {}", (dir_ / "ckpt").string()), "is at step 6");
}

}  // namespace
}  // namespace zerodp::cli_testing
