// SPDX-License-Identifier: Apache-2.0
// `zerodp plan --predict`: the flags that describe the machine, the
// calibration files from `zerodp bench comm --json` and `bench model
// --json`, and a one-line refusal (exit 2) for each kind of bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace {

using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;
using zerodp::cli_testing::write_temp;

const std::string kRun = "plan --model gpt-tiny --ranks 1,2 --micro-batch 2 --seq-len 16 --predict ";
const std::string kMachine = "--link-bandwidth 1Gbit --link-latency 50us --gemm-rate 30G --model-efficiency 0.5 ";

TEST(CliPredict, PrintsAStepTimeTablePerRankCount) {
  const Result r = run(kRun + kMachine);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Step time (--predict): gpt-tiny"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.125 GB/s each way (1 Gbit/s), latency 50 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nN = 1\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nN = 2\n"), std::string::npos);
  EXPECT_NE(r.out.find("ZeRO"), std::string::npos) << "the plan's own tables come first";
}

TEST(CliPredict, JsonHasEveryStageAtEveryN) {
  const Result r = run(kRun + kMachine + "--overlap-efficiency 0.5 --optimizer-ns 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& rows = j["step_time"]["rows"];
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0]["ranks"], 1);
  EXPECT_EQ(rows[0]["comm_s"].get<double>(), 0.0);  // one rank: no collective costs anything
  EXPECT_EQ(rows[7]["stage"], 3);
  EXPECT_GT(rows[7]["comm_s"].get<double>(), 0.0);
  EXPECT_LE(rows[7]["step_s"].get<double>(), rows[7]["serial_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["step_time"]["hardware"]["overlap_efficiency"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["step_time"]["hardware"]["link"]["bandwidth_GBps"].get<double>(), 0.125);
}

TEST(CliPredict, ReadsAHardwareFileThatFlagsOverride) {
  const auto file = write_temp("zerodp_predict_hw.json",
                               R"({"link": {"bandwidth_GBps": 0.5, "latency_us": 10}, "gemm_tflops": 0.03})");
  Result r = run(kRun + "--hardware " + file.string() + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["step_time"]["hardware"]["link"]["bandwidth_GBps"].get<double>(), 0.5);
  r = run(kRun + "--hardware " + file.string() + " --link-bandwidth 2GB --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["step_time"]["hardware"]["link"]["bandwidth_GBps"].get<double>(), 2.0);
}

// Up to 4 MiB: at 256 KiB a loaded machine (CI runs two tests at once) can
// time the smallest buffer as slowly as the largest, leaving no bandwidth.
TEST(CliPredict, CalibratesFromBenchOutputs) {
  const Result comm = run("bench comm --ranks 2 --min-bytes 1K --max-bytes 4M --quick --baseline none --json");
  ASSERT_EQ(comm.code, 0) << comm.err;
  const Result model = run("bench model --model gpt-tiny --batch 2 --seq 16 --steps 1 --json");
  ASSERT_EQ(model.code, 0) << model.err;
  const auto comm_file = write_temp("zerodp_predict_comm.json", comm.out);
  const auto model_file = write_temp("zerodp_predict_model.json", model.out);
  const Result r = run(kRun + "--ranks-per-host 2 --calibrate-comm " + comm_file.string() + " --calibrate-model " +
                       model_file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("shared memory       "), std::string::npos);
  EXPECT_NE(r.out.find("[bench comm " + comm_file.string() + " (2 ranks, thread, calls back to back)]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[bench model " + model_file.string() + " (gpt-tiny, B 2 x T 16)]"), std::string::npos) << r.out;
}

TEST(CliPredict, SaysWhetherTheLinksCallsFollowedAnIdleTime) {
  // --idle-ms: each timed call after that long idle (a run's collectives
  // follow compute); the file records it and the plan names it.
  const Result comm =
      run("bench comm --ranks 2 --collective all_reduce --min-bytes 1K --max-bytes 1M --quick --baseline none "
          "--idle-ms 2 --json");
  ASSERT_EQ(comm.code, 0) << comm.err;
  nlohmann::json file = nlohmann::json::parse(comm.out);
  EXPECT_EQ(file["idle_ms"], 2) << comm.out;
  // The plan's reading of the file is under test, not this machine's
  // timings: a call woken from a 2 ms sleep on a loaded machine can take
  // longer at 64 KiB than at 4 MiB, which leaves the fit no bandwidth. So
  // the rows keep their sizes and get the times of a 2 GB/s link with
  // 20 us of latency.
  for (auto& row : file["rows"]) {
    const double bytes = row["bytes"].get<double>(), seconds = 20e-6 + bytes / 2e9;
    row["seconds"] = seconds;
    row["algbw_GBps"] = row["busbw_GBps"] = bytes / seconds / 1e9;
  }
  const auto comm_file = write_temp("zerodp_predict_comm_idle.json", file.dump());
  const Result r = run(kRun + kMachine + "--ranks-per-host 2 --calibrate-comm " + comm_file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(2 ranks, thread, each call after 2 ms idle)]"), std::string::npos) << r.out;
  EXPECT_EQ(run("bench comm --idle-ms -1").code, 2);
}

TEST(CliPredict, HybridAndQuantizedRunsWithTheCodecFromBenchComm) {
  // 4 ranks, 2 per host, a group per host, int8 gradients; bench comm
  // --codec gives the codec's cost.
  const Result comm =
      run("bench comm --ranks 2 --dtype bf16 --min-bytes 64K --max-bytes 1M --quick --baseline none --codec int8 "
          "--json");
  ASSERT_EQ(comm.code, 0) << comm.err;
  const auto comm_file = write_temp("zerodp_predict_codec.json", comm.out);
  const std::string run_4 = "plan --model gpt-tiny --ranks 4 --micro-batch 2 --seq-len 16 --predict " + kMachine +
                            "--ranks-per-host 2 --local-bandwidth 5GB --quantize-grads ";
  Result r = run(run_4 + "--shard-group-size 2 --calibrate-comm " + comm_file.string() + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["step_time"]["hardware"]["codec"]["int8"]["quantize_ns"].get<double>(), 0);
  const nlohmann::json hybrid = j["step_time"]["rows"];  // a copy: j is parsed again below
  EXPECT_EQ(hybrid[0]["shard_group"], 4);                // stage 0 stays flat
  EXPECT_EQ(hybrid[0]["quantize_grads"], "none");
  EXPECT_EQ(hybrid[2]["shard_group"], 2);
  EXPECT_EQ(hybrid[2]["quantize_grads"], "int8");
  // Flat, the same machine: the gradients' exchanges cross the link.
  r = run(run_4 + "--json");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_LT(hybrid[2]["link_bytes"].get<double>(), j["step_time"]["rows"][2]["link_bytes"].get<double>());
  r = run(run_4 + "--shard-group-size 2 --calibrate-comm " + comm_file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hybrid sharding     stages 1-3 partition over groups of 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8 codec          pack "), std::string::npos) << r.out;
  expect_refused(run_4 + "--shard-group-size 3", "--shard-group-size 3 does not divide --ranks 4");
  expect_refused("plan --model gpt-tiny --ranks 6 --micro-batch 2 --seq-len 16 --predict " + kMachine +
                     "--ranks-per-host 2 --local-bandwidth 5GB --shard-group-size 3",
                 "one must divide the other");
}

TEST(CliPredict, RefusesBadInputInOneLine) {
  expect_refused("plan --params 7.5B --ranks 2 --predict " + kMachine, "--predict needs a GPT's shape");
  expect_refused(kRun + "--link-bandwidth 1Gbit", "--predict needs a GEMM rate");
  expect_refused(kRun + "--gemm-rate 30G", "needs the link between hosts");
  expect_refused(kRun + "--gemm-rate 30G --ranks-per-host 2", "needs their shared-memory link");
  expect_refused(kRun + "--gemm-rate 30G --link-bandwidth fast", "--link-bandwidth 'fast' is not understood");
  expect_refused(kRun + "--gemm-rate 30G --link-bandwidth 1Gbit --link-latency 5",
                 "--link-latency '5' is not understood");
  expect_refused(kRun + kMachine + "--overlap-efficiency 1.5", "overlap efficiency must be in [0, 1]");
  expect_refused(kRun + kMachine + "--hardware /nonexistent/hw.json", "cannot open the file");
  const auto unknown = write_temp("zerodp_predict_unknown.json", R"({"nic": 100})");
  expect_refused(kRun + kMachine + "--hardware " + unknown.string(), "unknown key \"nic\"");
  const auto broken = write_temp("zerodp_predict_broken.json", "{\"link\": ");
  expect_refused(kRun + kMachine + "--hardware " + broken.string(), "not valid JSON");
  const auto not_comm = write_temp("zerodp_predict_not_comm.json", R"({"format": "other"})");
  expect_refused(kRun + kMachine + "--calibrate-comm " + not_comm.string(), "give the output of zerodp bench comm");
  expect_refused(kRun + kMachine + "--calibrate-model " + not_comm.string(), "no \"model\"");
  expect_refused("plan --model gpt-tiny --ranks 2 --gemm-rate 30G", "add --predict");
}

}  // namespace
