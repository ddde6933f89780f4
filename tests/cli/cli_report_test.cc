// SPDX-License-Identifier: Apache-2.0
// `zerodp report` on metrics files as runs leave them: a run killed while
// writing leaves a cut last line (drawn, with a warning naming the file and
// the line); a bad line before the end is refused (exit 2, one line).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;
using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;
using zerodp::cli_testing::write_temp;

const std::string kStep1 = R"({"step":1,"loss":5.5,"lr":0.001,"loss_scale":1,"skipped":false,"grad_norm":1.5})";
const std::string kStep2 = R"({"step":2,"loss":5.0,"lr":0.001,"loss_scale":1,"skipped":false,"grad_norm":1.4})";
const std::string kStep3 = R"({"step":3,"loss":4.5,"lr":0.001,"loss_scale":1,"skipped":false,"grad_norm":1.3})";

TEST(CliReport, CutLastLineIsDrawnWithAWarning) {
  const fs::path metrics = write_temp("zerodp_cli_cut.jsonl", kStep1 + "\n" + kStep2 + "\n" + kStep3.substr(0, 30));
  const fs::path html = fs::temp_directory_path() / "zerodp_cli_cut.html";
  const Result r = run("report " + metrics.string() + " --out " + html.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zerodp_cli_cut.jsonl line 3"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.out.find("2 steps"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(html));
  fs::remove(html);
  fs::remove(metrics);
}

TEST(CliReport, BadLineInTheMiddleIsRefused) {
  const fs::path metrics =
      write_temp("zerodp_cli_mid.jsonl", kStep1 + "\n" + kStep2.substr(0, 30) + "\n" + kStep3 + "\n");
  const fs::path html = fs::temp_directory_path() / "zerodp_cli_mid.html";
  expect_refused("report " + metrics.string() + " --out " + html.string(),
                 "zerodp_cli_mid.jsonl line 2: not valid JSON");
  EXPECT_FALSE(fs::exists(html));
  fs::remove(metrics);
}

}  // namespace
