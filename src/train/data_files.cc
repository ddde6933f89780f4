// SPDX-License-Identifier: Apache-2.0
#include "train/data_files.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"

namespace zerodp::train {
namespace {

std::vector<std::string> glob_matches(const std::string& pattern) {
  glob_t g{};
  // Resolved once, on the main thread, before any rank starts.
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);  // NOLINT(concurrency-mt-unsafe)
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());  // glob sorts by the locale; this is byte order everywhere
  return out;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

}  // namespace

bool is_glob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> data_files(const std::string& pattern, const char* flag) {
  if (!is_glob(pattern) || exists(pattern)) return {pattern};
  std::vector<std::string> files = glob_matches(pattern);
  ZDP_CHECK(!files.empty(), ConfigError,
            "[data] {} '{}' matches no file: check the pattern (quote it, so the shell leaves it to zerodp)", flag,
            pattern);
  return files;
}

std::string validation_pattern(const std::string& pattern) {
  const bool glob = is_glob(pattern) && !exists(pattern);
  const std::string from = glob ? "_train_" : "train", to = glob ? "_val_" : "val";
  const size_t pos = pattern.rfind(from);
  if (pos == std::string::npos) return "";
  std::string candidate = pattern;
  candidate.replace(pos, from.size(), to);
  if (glob) return glob_matches(candidate).empty() ? "" : candidate;
  return exists(candidate) ? candidate : "";
}

}  // namespace zerodp::train
