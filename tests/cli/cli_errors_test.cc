// Bad input to `zerodp train` gets exit code 2 and one line on stderr that
// names the problem and the fix; nothing is written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;
using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;
using zerodp::cli_testing::write_temp;

TEST(CliErrors, TrainRefusesBadValuesWithExitCode2) {
  const fs::path metrics = fs::temp_directory_path() / "zerodp_cli_never.jsonl";
  fs::remove(metrics);
  const std::string m = " --metrics " + metrics.string();
  expect_refused("train --ranks 0" + m, "--ranks 0 must be at least 1");
  expect_refused("train --stage 4" + m, "stage 4 does not exist");
  expect_refused("train --micro-batch 0" + m, "--micro-batch 0");
  expect_refused("train --steps -3" + m, "--steps -3");
  expect_refused("train --precision fp8" + m, "unknown dtype 'fp8'");
  expect_refused("train --backend carrier-pigeon" + m, "carrier-pigeon");
  expect_refused("train --optimizer lamb" + m, "lamb");
  expect_refused("train --model gpt-huge" + m, "gpt-huge");
  expect_refused("train --seq-len 4096" + m, "longer than the model's context");
  expect_refused("train --clip -1" + m, "clipping -1");
  expect_refused("train --data /nonexistent/corpus.txt" + m, "does not exist");
  expect_refused("train --no-such-flag", "no-such-flag");
  // Thread ranks share the process: 2 ranks and the baseline (which a
  // sanitizer triples, so which stage would fit is plan_test's to check).
  expect_refused("train --stage 0 --ranks 2 --max-memory 85MB" + m, "ZeRO stage 0 needs");
  expect_refused("train --stage 0 --ranks 2 --max-memory 85MB" + m, "over --max-memory");
  expect_refused("train --max-memory 12XB" + m, "12XB");
  // A batch no machine holds is refused by the preflight (this machine's
  // memory), not met with std::bad_alloc.
  expect_refused("train --micro-batch 1000000" + m, "lower --micro-batch");
  EXPECT_FALSE(fs::exists(metrics)) << "a refused run wrote its metrics file";
}

// A size without a unit is refused, not read as bytes (it was: 32 bytes).
TEST(CliErrors, SizesNeedAUnit) {
  expect_refused("plan --params 7.5B --ranks 64 --device-memory 32", "'32' has no unit: write e.g. 32GB");
  expect_refused("train --max-memory 20 --steps 1", "'20' has no unit");
}

// The schedule names --help shows are the names --schedule takes.
TEST(CliErrors, TrainTakesTheScheduleNamesItsHelpShows) {
  const Result help = run("train --help");
  for (const char* name : {"constant", "warmup", "warmup-linear", "warmup-cosine"}) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
    const Result r = run(std::string("train --steps 1 --ranks 1 --micro-batch 2 --seq-len 8 --eval-batches 1 "
                                     "--sample-tokens 0 --held-out 0 --schedule ") + name);
    EXPECT_EQ(r.code, 0) << name << ": " << r.err;
  }
  expect_refused("train --schedule warmup-cos", "use constant, warmup, warmup-linear or warmup-cosine");
}

TEST(CliErrors, TrainRefusesDataFilesThatCannotServe) {
  const fs::path empty = write_temp("zerodp_cli_empty.txt", "");
  const fs::path tiny = write_temp("zerodp_cli_tiny.txt", "just a few bytes");
  expect_refused("train --data " + empty.string(), "is empty");
  expect_refused("train --data " + tiny.string() + " --seq-len 64", "too few for one sequence");
  // The split is named: 100 bytes leave 90 to train on and 10 to validate.
  const fs::path short_val = write_temp("zerodp_cli_short_val.txt", std::string(100, 'x'));
  expect_refused("train --data " + short_val.string() + " --seq-len 32",
                 "the validation split (the last 10% of " + short_val.string() + ") has 10 tokens, too few");
  fs::remove(short_val);
  fs::remove(empty);
  fs::remove(tiny);
}

TEST(CliErrors, TrainRefusesBadDeepSpeedConfigs) {
  const fs::path both = write_temp("zerodp_cli_both.json", R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})");
  const fs::path unknown = write_temp("zerodp_cli_unknown.json", R"({"train_batch_sise": 8})");
  const fs::path batch = write_temp("zerodp_cli_batch.json",
                                    R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4})");
  const fs::path broken = write_temp("zerodp_cli_broken.json", "{ \"fp16\": ");
  expect_refused("train --ranks 2 --config " + both.string(), "both enabled");
  expect_refused("train --ranks 2 --config " + unknown.string(), "unknown key 'train_batch_sise'");
  expect_refused("train --ranks 2 --config " + batch.string(), "not a multiple");
  expect_refused("train --ranks 2 --config " + broken.string(), "not valid JSON");
  expect_refused("train --config /nonexistent/ds.json", "ds.json");
  for (const auto& p : {both, unknown, batch, broken}) fs::remove(p);
}

TEST(CliErrors, HelpIsCompleteAndSucceeds) {
  const fs::path out = fs::temp_directory_path() / "zerodp_cli_help.txt";
  const int status = std::system((std::string(ZERODP_BINARY) + " train --help >" + out.string()).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream in(out);
  const std::string help((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* flag : {"--model", "--stage", "--ranks", "--backend", "--precision", "--micro-batch",
                           "--grad-accum", "--seq-len", "--steps", "--lr", "--schedule", "--clip", "--seed", "--data",
                           "--activation-checkpointing", "--metrics", "--config", "--max-memory", "--save",
                           "--resume", "--init-from", "--comm-timeout"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  fs::remove(out);
}

}  // namespace
