// SPDX-License-Identifier: Apache-2.0
// `zerodp bench disk`: a JSON result on both backends, its file gone
// afterwards, and one-line refusals for a missing directory, a block that
// O_DIRECT cannot take and a file larger than the free space.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace zerodp::cli_testing {
namespace {

TEST(CliBenchDisk, MeasuresBothBackendsAndLeavesNothing) {
  const fs::path dir = fs::temp_directory_path() / ("zerodp_bench_disk." + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const std::string io : {"auto", "threads"}) {
    const Result r =
        run("bench disk --dir " + dir.string() + " --bytes 8M --block 256K --depth 4 --io " + io + " --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("bytes"), 8u << 20);
    EXPECT_EQ(j.at("block"), 256u << 10);
    EXPECT_EQ(j.at("depth"), 4);
    EXPECT_GT(j.at("write_GBps").get<double>(), 0.0);
    EXPECT_GT(j.at("read_GBps").get<double>(), 0.0);
    if (io == "threads") {
      EXPECT_EQ(j.at("backend"), "threads");
    }
    // io_uring where the kernel gives a ring, else threads saying why.
    if (j.at("backend") == "threads" && io == "auto") {
      EXPECT_TRUE(j.contains("fallback"));
    }
    EXPECT_TRUE(fs::is_empty(dir)) << "the benchmark's file was left behind";
  }
  const Result text = run("bench disk --dir " + dir.string() + " --bytes 4M");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("bench disk: " + dir.string()), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fdatasync included"), std::string::npos) << text.out;
  expect_refused("bench disk --dir " + (dir / "missing").string(), "is not a directory");
  expect_refused("bench disk --dir " + dir.string() + " --block 1000", "--block 1000 must be a multiple of 4096");
  expect_refused("bench disk --dir " + dir.string() + " --bytes 1M --block 768K", "must be a multiple of --block");
  expect_refused("bench disk --dir " + dir.string() + " --bytes 1000000G", "MiB free");
  expect_refused("bench disk --dir " + dir.string() + " --io mmap", "--io 'mmap': use auto or threads");
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zerodp::cli_testing
