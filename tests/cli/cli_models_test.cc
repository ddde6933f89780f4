// SPDX-License-Identifier: Apache-2.0
// One preset list and one model-JSON schema for every command: what `zerodp
// model list` prints, `zerodp plan --model` takes; a JSON config `plan`
// takes, `train` takes; plan's old spellings are refused the same way by both;
// plan's pipeline section for a GPT --model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "cli_run.h"

namespace {

using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;

TEST(CliModels, PlanTakesEveryNameModelListPrints) {
  const Result list = run("model list");
  ASSERT_EQ(list.code, 0) << list.err;
  std::istringstream lines(list.out);
  std::string line;
  int names = 0;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.empty()) continue;
    const Result r = run("plan --ranks 4 --model " + name);
    EXPECT_EQ(r.code, 0) << name << "\n" << r.err;
    ++names;
  }
  EXPECT_GE(names, 9);
  for (const char* name : {"gpt2-350m", "gpt2-774m", "gpt2-1558m", "gpt-30m", "gpt-tiny"}) {
    EXPECT_NE(list.out.find(std::string(name) + " "), std::string::npos) << name << " missing from model list";
  }
  expect_refused("plan --ranks 4 --model gpt-huge", "gpt-huge");
}

TEST(CliModels, TrainAndPlanTakeOneModelSchema) {
  const std::string json = R"('{"kind":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"max_seq_len":8}')";
  const Result plan = run("plan --ranks 2 --model " + json);
  EXPECT_EQ(plan.code, 0) << plan.err;
  const Result info = run("model info --model " + json);
  EXPECT_EQ(info.code, 0) << info.err;
  const std::string old = R"('{"type":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"context":8}')";
  expect_refused("plan --ranks 2 --model " + old, "write \"kind\"");
  expect_refused("train --steps 1 --model " + old, "write \"kind\"");
  const std::string context = R"('{"kind":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"context":8}')";
  expect_refused("train --steps 1 --model " + context, "write \"max_seq_len\"");
}

// --pipeline-stages: the pipeline's table in text, and per N in JSON.
TEST(CliModels, PlanPrintsThePipeline) {
  const Result text = run("plan --model gpt2-124m --ranks 4 --pipeline-stages 2 --grad-accum 8 --device-memory 12GB");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("P 2 stages x D 2 data-parallel replicas, 1f1b with M = 8"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bubble (P-1)/(M+P-1) = 11.1%"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("blocks with P = 2,"), std::string::npos) << text.out;
  const Result predicted =
      run("plan --model gpt2-124m --ranks 4 --pipeline-stages 2 --grad-accum 8 --predict --gemm-rate 100G "
          "--ranks-per-host 2 --link-bandwidth 1Gbit --local-bandwidth 10GB");
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  EXPECT_NE(predicted.out.find("step time (--predict, ZeRO 1): "), std::string::npos) << predicted.out;
  const Result json = run("plan --model gpt2-124m --ranks 2,4 --pipeline-stages 2 --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["pipeline"].size(), 2u);
  EXPECT_EQ(j["pipeline"][1]["replicas"], 2);
  EXPECT_EQ(j["pipeline"][0]["per_stage"].size(), 2u);
}

}  // namespace
