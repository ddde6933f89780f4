// SPDX-License-Identifier: Apache-2.0
#include "ckpt/checkpoint_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "ckpt/file_io.h"
#include "ckpt/format.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

namespace fs = std::filesystem;
constexpr const char* kLatestName = "latest";
constexpr std::string_view kPrefix = "step-";

// The step of "step-<digits>", or nothing for any other name.
std::optional<int64_t> parse_step(std::string_view name) {
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.size() > 18) return std::nullopt;
  int64_t step = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string step_dir_name(int64_t step) { return fmt::format("step-{:08d}", step); }

bool is_complete_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(join_path(dir, kManifestName), ec);
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& root) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const auto step = parse_step(name);
    if (step && entry.is_directory(ec) && is_complete_checkpoint(entry.path().string())) {
      out.push_back({*step, entry.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::string read_latest(const std::string& root) {
  const std::string path = join_path(root, kLatestName);
  std::error_code ec;
  if (!fs::exists(path, ec)) return "";
  std::string text = read_small_file(path, 256);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  ZDP_CHECK(parse_step(text).has_value(), InputFileError,
            "[ckpt] {}: does not name a step-* checkpoint (\"{}\"): the file is corrupt; remove it to fall back to the "
            "highest complete checkpoint",
            path, text);
  return text;
}

void write_latest(const std::string& root, const std::string& name) {
  write_file_atomically(join_path(root, kLatestName), name + "\n");
}

std::string resolve_checkpoint(const std::string& path) {
  std::error_code ec;
  ZDP_CHECK(fs::exists(path, ec), ConfigError,
            "[ckpt] {} does not exist: pass a checkpoint directory or the "
            "directory that training saved into",
            path);
  if (is_complete_checkpoint(path)) return path;
  const std::string latest = read_latest(path);
  if (!latest.empty()) {
    std::string dir = join_path(path, latest);
    if (is_complete_checkpoint(dir)) return dir;
    if (is_complete_checkpoint(dir + ".prev")) return dir + ".prev";  // a save of the same step was interrupted
    ZDP_THROW(InputFileError,
              "[ckpt] {}/latest names {}, which is missing or incomplete: pass one of the step-* "
              "directories explicitly",
              path, latest);
  }
  const auto all = list_checkpoints(path);
  ZDP_CHECK(!all.empty(), ConfigError,
            "[ckpt] {} holds no checkpoint (no {}, no 'latest' file, no complete step-* directory)", path,
            kManifestName);
  return all.back().path;
}

std::vector<std::string> rotate_checkpoints(const std::string& root, int keep_last) {
  std::vector<std::string> removed;
  auto remove = [&](const fs::path& p) {
    std::error_code ec;
    fs::remove_all(p, ec);
    ZDP_CHECK(!ec, IoError, "[ckpt rotate] cannot remove {} ({})", p.string(), ec.message());
    removed.push_back(p.string());
  };
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return removed;
  // Leftovers of interrupted saves.
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec)) continue;
    // A save that never finished, or a checkpoint whose replacement did.
    const bool unfinished = ends_with(name, ".tmp") && parse_step(name.substr(0, name.size() - 4));
    const bool replaced = ends_with(name, ".prev") && parse_step(name.substr(0, name.size() - 5)) &&
                          is_complete_checkpoint((fs::path(root) / name.substr(0, name.size() - 5)).string());
    if (unfinished || replaced) remove(entry.path());
  }
  if (keep_last <= 0) return removed;
  const std::string latest = read_latest(root);
  const auto all = list_checkpoints(root);
  const size_t keep = static_cast<size_t>(keep_last);
  for (size_t i = 0; i + keep < all.size(); ++i) {
    if (fs::path(all[i].path).filename() == latest) continue;
    remove(all[i].path);
  }
  return removed;
}

}  // namespace zerodp::ckpt
