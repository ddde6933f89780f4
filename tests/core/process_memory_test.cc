// SPDX-License-Identifier: Apache-2.0
// What the operating system says about memory: this process's resident set
// and the limits a run is checked against (the machine's, a cgroup's).
#include "core/process_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace zerodp {
namespace {

std::string temp_file(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() / ("zerodp_pm_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << content;
  return path.string();
}

TEST(ProcessMemory, ResidentSetGrowsWithTouchedMemoryAndThePeakStays) {
  const uint64_t before = current_rss_bytes();
  ASSERT_GT(before, 0u);
  std::vector<char> block(64 << 20, 1);  // touched
  const uint64_t now = current_rss_bytes();
  EXPECT_GE(now, before + (60u << 20));
  EXPECT_GE(peak_rss_bytes(), now);  // read after: the high-water mark never falls
  EXPECT_GT(machine_memory_bytes(), 0u);
  EXPECT_EQ(block[block.size() - 1], 1);  // the block is used, so it exists
}

TEST(ProcessMemory, CgroupLimitsV2V1AndNone) {
  const std::string none = temp_file("none", "");
  const std::string v2 = temp_file("v2", "2147483648\n"), v2_max = temp_file("v2max", "max\n");
  const std::string v1 = temp_file("v1", "1073741824\n"), v1_none = temp_file("v1none", "9223372036854771712\n");
  EXPECT_EQ(cgroup_memory_limit_bytes(v2.c_str(), v1.c_str()), 2147483648u);      // v2 first
  EXPECT_EQ(cgroup_memory_limit_bytes(v2_max.c_str(), v1.c_str()), 1073741824u);  // "max": no v2 limit
  EXPECT_EQ(cgroup_memory_limit_bytes("/nonexistent", v1.c_str()), 1073741824u);
  EXPECT_EQ(cgroup_memory_limit_bytes(v2_max.c_str(), v1_none.c_str()), 0u);  // v1's "no limit"
  EXPECT_EQ(cgroup_memory_limit_bytes("/nonexistent", "/nonexistent"), 0u);
  EXPECT_EQ(cgroup_memory_limit_bytes(none.c_str(), none.c_str()), 0u);
  for (const std::string& p : {none, v2, v2_max, v1, v1_none}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace zerodp
