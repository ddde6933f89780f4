// SPDX-License-Identifier: Apache-2.0
// Runs the zerodp executable as a user would, for the CLI tests: its exit code
// and stderr, and the check that a refusal is exit code 2 with one line.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace zerodp::cli_testing {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string take_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  fs::remove(p);
  return text;
}

// `zerodp ARGS`: its exit code, stdout and stderr.
inline Result run(const std::string& args) {
  // Unique per process and call: CTest runs these tests in parallel.
  static int calls = 0;
  const std::string base =
      (fs::temp_directory_path() / ("zerodp_cli_test." + std::to_string(getpid()) + "." + std::to_string(++calls)))
          .string();
  const std::string cmd = std::string(ZERODP_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(cmd.c_str());  // through the shell, for its redirections
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = take_file(base + ".out");
  r.err = take_file(base + ".err");
  return r;
}

// NAME under the temporary directory, prefixed with the process id: CTest
// runs tests in parallel, and another checkout's suite may run beside this one.
inline fs::path write_temp(const std::string& name, const std::string& content) {
  fs::path p = fs::temp_directory_path() / (std::to_string(getpid()) + "." + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

// Exit 2, one line (a second "Run with --help" line is allowed for flag
// parse errors), containing `needle`.
inline void expect_refused(const std::string& args, const std::string& needle) {
  const Result r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
  size_t lines = 0;
  for (char c : r.err) lines += c == '\n';
  EXPECT_LE(lines, 2u) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

}  // namespace zerodp::cli_testing
