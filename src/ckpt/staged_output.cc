// SPDX-License-Identifier: Apache-2.0
#include "ckpt/staged_output.h"

#include <filesystem>

#include "ckpt/file_io.h"
#include "core/error.h"

namespace zerodp::ckpt {

namespace fs = std::filesystem;

void check_fresh_output(const std::string& out_dir, const char* what) {
  std::error_code ec;
  if (!fs::exists(out_dir, ec)) return;
  ZDP_CHECK(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec), ConfigError,
            "[ckpt {}] {} already exists and is not an empty directory: choose a new output path", what, out_dir);
}

StagedOutput::StagedOutput(std::string out_dir, const char* what) : out_(std::move(out_dir)), tmp_(out_ + ".tmp") {
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  ZDP_CHECK(!ec, IoError, "[ckpt {}] cannot create {} ({})", what, tmp_, ec.message());
}

StagedOutput::~StagedOutput() {
  std::error_code ec;
  if (!committed_) fs::remove_all(tmp_, ec);
}

void StagedOutput::commit() {
  sync_directory(tmp_);
  std::error_code ec;
  if (fs::exists(out_, ec)) fs::remove(out_, ec);  // an empty directory (check_fresh_output)
  rename_path(tmp_, out_);
  sync_directory(parent_path(fs::absolute(out_).string()));
  committed_ = true;
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace zerodp::ckpt
