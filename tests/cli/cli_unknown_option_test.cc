// SPDX-License-Identifier: Apache-2.0
// A flag zerodp does not know is refused in one line that names the
// subcommand and, where one is close, the flag that was meant: the names
// DeepSpeed, torchrun and llm.c users type, and typos.
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"

namespace {

using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;

TEST(CliUnknownOption, SuggestsTheFlagOtherToolsCallSo) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"train --dtype fp16", "unknown option --dtype for 'train'; did you mean --precision?"},
      {"train --zero-stage 2", "unknown option --zero-stage for 'train'; did you mean --stage?"},
      {"train --batch-size 4", "did you mean --micro-batch?"},
      {"train --gradient-accumulation-steps 2", "did you mean --grad-accum?"},
      {"train --gradient_accumulation_steps 2", "did you mean --grad-accum?"},
      {"train --nproc-per-node 2", "did you mean --ranks?"},
      {"train --world-size 2", "did you mean --ranks?"},
      {"train --num-steps 5", "did you mean --steps?"},
      {"train --max-steps 5", "did you mean --steps?"},
      {"train --iters 5", "did you mean --steps?"},
      {"train --learning-rate 1e-3", "unknown option --learning-rate for 'train'; did you mean --lr?"},
      {"train --dtype=fp16", "unknown option --dtype for 'train'; did you mean --precision?"},
  };
  for (const auto& c : cases) expect_refused(c.args, c.message);
}

TEST(CliUnknownOption, SuggestsTheNearestFlagOfEverySubcommand) {
  expect_refused("train --precison bf16", "unknown option --precison for 'train'; did you mean --precision?");
  expect_refused("train --stpes 3", "did you mean --steps?");
  expect_refused("train --micro 4", "did you mean --micro-batch?");
  expect_refused("plan --params 1B --ranks 4 --dtype bf16",
                 "unknown option --dtype for 'plan'; did you mean --precision?");
  expect_refused("plan --params 1B --ranks 4 --device-mem 32GB", "did you mean --device-memory?");
  expect_refused("model info --unit", "unknown option --unit for 'model info'; did you mean --units?");
  expect_refused("ckpt reshard a b --ranks 2 --stages 1",
                 "unknown option --stages for 'ckpt reshard'; did you mean --stage?");
  expect_refused("report m.jsonl --svgdir x", "unknown option --svgdir for 'report'; did you mean --svg-dir?");
  expect_refused("bench comm --precision bf16", "unknown option --precision for 'bench comm'; did you mean --dtype?");
  expect_refused("bench engine --stage 1", "unknown option --stage for 'bench engine'; did you mean --stages?");
}

TEST(CliUnknownOption, NoSuggestionWhenNothingIsClose) {
  const Result r = run("train --no-such-flag");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("zerodp: unknown option --no-such-flag for 'train'\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Run with --help"), std::string::npos) << r.err;
  // A negative number is a value, not an unknown flag.
  expect_refused("train --steps -3", "--steps -3");
}

}  // namespace
