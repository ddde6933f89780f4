// SPDX-License-Identifier: Apache-2.0
// A fresh directory for one test, named after it and the process (CTest
// runs tests in parallel), removed with its contents at the end.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace zerodp::testing {

struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

}  // namespace zerodp::testing
