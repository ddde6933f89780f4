// SPDX-License-Identifier: Apache-2.0
// Bad input to `zerodp train` gets exit code 2 and one line on stderr that
// names the problem and the fix; nothing is written.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
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
  expect_refused("train --checkpoint-timeout 0" + m, "--checkpoint-timeout 0 must be a positive number of seconds");
  expect_refused("train --precision fp8" + m, "unknown dtype 'fp8'");
  expect_refused("train --backend carrier-pigeon" + m, "carrier-pigeon");
  expect_refused("train --optimizer lamb" + m, "lamb");
  expect_refused("train --model gpt-huge" + m, "gpt-huge");
  expect_refused("train --seq-len 4096" + m, "longer than the model's context");
  expect_refused("train --clip -1" + m, "--clip -1");
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
  // The compressed collectives exist only where the stage has the collective.
  expect_refused("train --stage 2 --quantize-weights" + m, "--quantize-weights needs stage 3");
  expect_refused("train --stage 0 --quantize-grads" + m, "--quantize-grads needs stage 1, 2 or 3");
  expect_refused("train --quantize-grads-bits 4" + m, "--quantize-grads-bits needs --quantize-grads");
  expect_refused("train --quantize-grads --quantize-grads-bits 2" + m, "--quantize-grads-bits 2 must be 8 or 4");
  expect_refused("train --quantize-block 64" + m, "--quantize-block sizes the compressed collectives' blocks");
  expect_refused("train --stage 3 --quantize-weights --quantize-block 48" + m,
                 "--quantize-block 48 is not offered: use a power of two from 32 to 2048");
  expect_refused("train --quantize-rounding stochastic" + m,
                 "--quantize-rounding rounds the compressed collectives' codes");
  expect_refused("train --stage 3 --quantize-weights --quantize-rounding up" + m, "unknown rounding 'up'");
  expect_refused("train --quantize-delay 100" + m, "--quantize-delay delays the compressed collectives");
  expect_refused("train --stage 3 --quantize-weights --quantize-delay -5" + m, "--quantize-delay -5 must be >= 0");
  expect_refused("plan --params 1B --ranks 8 --quantize-grads --quantize-block 4096",
                 "--quantize-block 4096 is not offered");
  // Hybrid sharding: the group must divide the ranks, and partition something.
  expect_refused("train --ranks 4 --shard-group-size 3" + m, "--shard-group-size 3 does not divide the 4 ranks");
  expect_refused("train --ranks 2 --shard-group-size 4" + m, "--shard-group-size 4 does not divide the 2 ranks");
  expect_refused("train --ranks 4 --stage 0 --shard-group-size 2" + m, "--shard-group-size 2 needs stage 1, 2 or 3");
  expect_refused("train --shard-group-size -2" + m, "--shard-group-size -2 must be at least 1");
  expect_refused("plan --params 1B --ranks 4,6 --shard-group-size 4", "--shard-group-size 4 does not divide --ranks 6");
  expect_refused("plan --model gpt-10m --ranks 2 --micro-batch 2 --compute fp16", "--compute fp16: use fp32 or bf16");
  // Pipeline parallelism: the stages must divide N, fit the blocks, and need a shape.
  expect_refused("plan --model gpt2-124m --ranks 4 --pipeline-stages 3", "--pipeline-stages 3 does not divide the 4");
  expect_refused("plan --model gpt-tiny --ranks 8 --pipeline-stages 8", "--pipeline-stages 8 exceeds the model's 4");
  expect_refused("plan --params 1B --ranks 4 --pipeline-stages 2", "--pipeline-stages needs a GPT's shape");
  expect_refused("plan --model gpt2-124m --ranks 4 --pipeline-stages 2 --pipeline-cut 6,5", "--pipeline-cut needs 2");
  expect_refused("plan --model gpt2-124m --ranks 4 --pipeline-stages 2 --pipeline-schedule zb", "use 1f1b or gpipe");
  // A pipelined run: N a multiple of P, stages 0-1, no offload or hybrid sharding yet, GPT models.
  const std::string pp = " --pipeline-stages 2 --stage 1";
  expect_refused("train --ranks 3" + pp + m, "--pipeline-stages 2 does not divide the 3 ranks");
  expect_refused("train --ranks 4 --pipeline-stages 2 --stage 2" + m, "--stage 2 with --pipeline-stages");
  expect_refused("train --ranks 4" + pp + " --pipeline-cut 1,2,1" + m, "--pipeline-cut gives 3 stages");
  expect_refused("train --ranks 4" + pp + " --pipeline-cut 2,x" + m, "--pipeline-cut '2,x'");
  expect_refused("train --ranks 4" + pp + " --pipeline-schedule zb" + m, "use 1f1b or gpipe");
  expect_refused("train --ranks 4" + pp + " --pipeline-balance time" + m, "use flops or memory");
  expect_refused("plan --model gpt2-124m --ranks 4 --pipeline-stages 2 --pipeline-balance time", "use flops or memory");
  expect_refused("train --ranks 4" + pp + " --shard-group-size 2" + m, "--shard-group-size with --pipeline-stages");
  expect_refused("train --ranks 4" + pp + " --model llama-tiny" + m, "cuts GPT models only so far");
  // Stochastic rounding rounds a bf16 momentum; there is nothing to round otherwise.
  expect_refused("train --optimizer lion --lion-momentum-rounding stochastic" + m,
                 "--lion-momentum-rounding rounds a bf16 momentum");
  expect_refused("train --optimizer lion --lion-momentum-dtype bf16 --lion-momentum-rounding up" + m,
                 "unknown rounding 'up'");
  EXPECT_FALSE(fs::exists(metrics)) << "a refused run wrote its metrics file";
}

// A bad value is refused naming the flag the user typed (and the key of a
// --config file that sets the same thing), not the module that checks it.
TEST(CliErrors, BadFlagValuesNameTheFlagNotAModule) {
  const fs::path metrics = fs::temp_directory_path() / "zerodp_cli_never_flags.jsonl";
  fs::remove(metrics);
  const struct {
    std::string args;
    std::string flag;
    std::string key;  // the --config key it would be in a file: not named, since the flag gave it
  } cases[] = {
      {"--lr -1", "--lr -1", "optimizer.params.lr"},
      {"--optimizer sgd --lr -1", "--lr -1", "optimizer.params.lr"},
      {"--weight-decay -1", "--weight-decay -1", "optimizer.params.weight_decay"},
      {"--clip -1", "--clip -1", "gradient_clipping"},
      {"--warmup -5", "--warmup -5", "scheduler.params.warmup_num_steps"},
      {"--warmup 0", "--warmup 0", "scheduler.params.warmup_num_steps"},
      {"--stage 7", "--stage 7", "zero_optimization.stage"},
      {"--grad-accum 0", "--grad-accum 0", "gradient_accumulation_steps"},
      {"--optimizer sgd --momentum 2", "--momentum 2", "optimizer.params.momentum"},
      {"--optimizer lion --lr -1", "--lr -1", "optimizer.params.lr"},
      {"--optimizer lion --weight-decay -0.1", "--weight-decay -0.1", "optimizer.params.weight_decay"},
      {"--optimizer lion --betas 1,0.99", "--betas 1,0.99", "optimizer.params.betas"},
      {"--betas 0.9,-0.5", "--betas 0.9,-0.5", "optimizer.params.betas"},
      {"--optimizer lion --betas 0.9", "--betas needs two numbers", "optimizer.params.betas"},
      {"--optimizer adam8bit --lr -1", "--lr -1", "optimizer.params.lr"},
      {"--optimizer adam8bit --betas 0.9,1", "--betas 0.9,1", "optimizer.params.betas"},
      {"--optimizer lion --lion-momentum-dtype fp16", "--lion-momentum-dtype fp16", "optimizer.params"},
      {"--optimizer adafactor --lr 1e-3", "--lr 0.001", "optimizer.params.lr"},
      {"--optimizer adafactor --relative-step false", "--relative-step false", "optimizer.params.relative_step"},
      {"--optimizer adafactor --decay-rate 0.5", "--decay-rate 0.5", "optimizer.params.decay_rate"},
      {"--optimizer adafactor --clip-threshold 0", "--clip-threshold 0", "optimizer.params.clip_threshold"},
      {"--optimizer adafactor --beta1 1", "--beta1 1", "optimizer.params.beta1"},
      {"--optimizer adafactor --adafactor-eps 1e-30", "--adafactor-eps needs two numbers", "optimizer.params.eps"},
      {"--momentum -0.5", "--momentum -0.5", "optimizer.params.momentum"},
      {"--min-lr-ratio 2", "--min-lr-ratio 2", "scheduler.params.cos_min_ratio"},
      {"--precision fp16 --loss-scale -1", "--loss-scale -1", "fp16.loss_scale"},
      {"--precision bf16 --offload-optimizer /nonexistent/offload",
       "[--offload-optimizer] /nonexistent/offload is not a directory", "zero_optimization.offload_optimizer"},
      {"--stage 3 --precision bf16 --offload-params /nonexistent/offload",
       "[--offload-params] /nonexistent/offload is not a directory", "zero_optimization.offload_param"},
      {"--stage 2 --precision bf16 --offload-params /tmp", "--offload-params needs stage 3",
       "zero_optimization.offload_param"},
      {"--stage 3 --precision fp32 --offload-params /tmp", "--offload-params needs --precision bf16",
       "zero_optimization.offload_param"},
  };
  for (const auto& c : cases) {
    // Short if a value were accepted: the test must not turn into a training run.
    const std::string args =
        "train " + c.args + " --steps 2 --sample-tokens 0 --held-out 0 --eval-every 0 --metrics " + metrics.string();
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << args << "\n" << r.err;
    if (c.flag != "--loss-scale -1") {
      EXPECT_EQ(r.err.find(c.key), std::string::npos) << args << "\n" << r.err;
    }
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    for (const char* tag : {"[engine]", "[adamw]", "[adam]", "[sgd]", "[lion]", "[adam8bit]", "[adafactor]",
                            "[lr_schedule]", "[loss_scaler]", "[optimizer]", "[clip]", "internal error"}) {
      EXPECT_EQ(r.err.find(tag), std::string::npos) << args << "\n" << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(metrics)) << "a refused run wrote its metrics file";
}

// DeepSpeed's MiCS and hpZ sizes set --shard-group-size; a bad one is
// refused naming the key the file used.
TEST(CliErrors, ShardGroupKeysNameTheKey) {
  for (const char* key : {"mics_shard_size", "zero_hpz_partition_size"}) {
    const fs::path file = write_temp("zerodp_cli_bad_group.json",
                                     fmt::format(R"({{"zero_optimization": {{"stage": 3, "{}": 3}}}})", key));
    const Result r = run("train --ranks 4 --steps 1 --sample-tokens 0 --held-out 0 --config " + file.string());
    EXPECT_EQ(r.code, 2) << key << "\n" << r.err;
    EXPECT_NE(r.err.find(fmt::format("--config's zero_optimization.{} 3 does not divide the 4 ranks", key)),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// The same refusals for values a --config file sets name its key.
TEST(CliErrors, BadConfigValuesNameTheKey) {
  const struct {
    std::string json;
    std::string key;
  } cases[] = {
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": -1}}})", "optimizer.params.lr"},
      {R"({"optimizer": {"type": "AdamW", "params": {"betas": [1.5, 0.999]}}})", "optimizer.params.betas"},
      {R"({"optimizer": {"type": "Lion", "params": {"betas": [0.9, 1.0]}}})", "optimizer.params.betas"},
      {R"({"optimizer": {"type": "Lion", "params": {"lr": -1e-4}}})", "optimizer.params.lr"},
      {R"({"optimizer": {"type": "AdamW8bit", "params": {"weight_decay": -1}}})", "optimizer.params.weight_decay"},
      {R"({"optimizer": {"type": "Adam8bit", "params": {"adam_w_mode": false}}})", "adam_w_mode"},
      {R"({"optimizer": {"type": "Adafactor", "params": {"lr": 1e-3}}})", "optimizer.params.lr"},
      {R"({"optimizer": {"type": "Adafactor", "params": {"eps": 1e-30}}})", "optimizer.params.eps"},
      {R"({"optimizer": {"type": "Adafactor", "params": {"decay_rate": 0.8}}})", "optimizer.params.decay_rate"},
      {R"({"zero_optimization": {"stage": 9}})", "zero_optimization.stage"},
      {R"({"gradient_clipping": -2})", "gradient_clipping"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 5, "warmup_max_lr": 1}}})",
       "scheduler.params.warmup_min_lr"},
      {R"({"fp16": {"enabled": true, "loss_scale_window": 0}})", "fp16.loss_scale_window"},
      {R"({"zero_optimization": {"stage": 2, "zero_quantized_weights": true}})",
       "zero_optimization.zero_quantized_weights"},
      {R"({"zero_optimization": {"stage": 0, "zero_quantized_gradients": true}})",
       "zero_optimization.zero_quantized_gradients"},
      {R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 0}})",
       "zero_optimization.zero_hpz_partition_size"},
      {R"({"zero_optimization": {"stage": 3, "mics_shard_size": 2, "zero_hpz_partition_size": 4}})",
       "zero_optimization.zero_hpz_partition_size"},
  };
  for (const auto& c : cases) {
    const fs::path file = write_temp("zerodp_cli_bad_value.json", c.json);
    const Result r = run("train --steps 1 --sample-tokens 0 --held-out 0 --config " + file.string());
    EXPECT_EQ(r.code, 2) << c.json << "\n" << r.err;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << c.json << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.json << "\n" << r.err;
    for (const char* tag : {"[engine]", "[adamw]", "[adam]", "[sgd]", "[lion]", "[adam8bit]", "[adafactor]",
                            "[lr_schedule]", "[loss_scaler]"}) {
      EXPECT_EQ(r.err.find(tag), std::string::npos) << c.json << "\n" << r.err;
    }
    fs::remove(file);
  }
}

// A size without a unit is refused, not read as bytes (it was: 32 bytes).
TEST(CliErrors, SizesNeedAUnit) {
  expect_refused("plan --params 7.5B --ranks 64 --device-memory 32", "'32' has no unit: write e.g. 32GB");
  expect_refused("train --max-memory 20 --steps 1", "'20' has no unit");
}

// A clock bench model does not have is refused before anything runs.
TEST(CliErrors, BenchModelRefusesAnUnknownClock) {
  expect_refused("bench model --model gpt-tiny --steps 1 --clock tsc", "--clock 'tsc': use cpu or wall");
}

// The schedule names --help shows are the names --schedule takes.
TEST(CliErrors, TrainTakesTheScheduleNamesItsHelpShows) {
  const Result help = run("train --help");
  for (const char* name : {"constant", "warmup", "warmup-linear", "warmup-cosine"}) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
    const Result r = run(std::string("train --steps 1 --ranks 1 --micro-batch 2 --seq-len 8 --eval-batches 1 "
                                     "--sample-tokens 0 --held-out 0 --schedule ") +
                         name);
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
  const fs::path batch =
      write_temp("zerodp_cli_batch.json", R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4})");
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
  for (const char* flag : {"--model",
                           "--stage",
                           "--ranks",
                           "--backend",
                           "--precision",
                           "--micro-batch",
                           "--grad-accum",
                           "--seq-len",
                           "--steps",
                           "--lr",
                           "--schedule",
                           "--clip",
                           "--seed",
                           "--data",
                           "--activation-checkpointing",
                           "--metrics",
                           "--config",
                           "--max-memory",
                           "--save",
                           "--resume",
                           "--init-from",
                           "--comm-timeout",
                           "--checkpoint-timeout"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  fs::remove(out);
}

}  // namespace
