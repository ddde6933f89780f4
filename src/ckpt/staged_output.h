// SPDX-License-Identifier: Apache-2.0
// Output directories of the offline tools (reshard, consolidate): refused
// unless new or empty, built under OUT.tmp and renamed to OUT only when
// complete, so a tool that fails part-way (a damaged shard, a full disk)
// leaves neither OUT nor OUT.tmp behind.
#pragma once

#include <string>

namespace zerodp::ckpt {

// Refuses (ConfigError) an OUT that exists and is not an empty directory.
// `what` names the tool in the message ("reshard").
void check_fresh_output(const std::string& out_dir, const char* what);

// "dir///" -> "dir"; "/" stays.
std::string without_trailing_slashes(std::string path);

class StagedOutput {
 public:
  StagedOutput(std::string out_dir, const char* what);
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  ~StagedOutput();
  // Where the files are written until commit(): OUT.tmp.
  const std::string& dir() const { return tmp_; }
  // Syncs OUT.tmp, renames it to OUT and syncs OUT's parent.
  void commit();

 private:
  std::string out_, tmp_;
  bool committed_ = false;
};

}  // namespace zerodp::ckpt
