// SPDX-License-Identifier: Apache-2.0
#include "train/output_preflight.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>

#include "comm/mpi.h"
#include "core/error.h"
#include "plan/checkpoint_size.h"

namespace zerodp::train {
namespace {

namespace fs = std::filesystem;

std::string bytes_text(uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
}

// The nearest of `path` and its parents that exists ("" when none does).
fs::path existing_ancestor(const fs::path& path) {
  std::error_code ec;
  for (fs::path p = path; !p.empty(); p = p.parent_path()) {
    if (fs::exists(fs::symlink_status(p, ec))) return p;
    if (p == p.parent_path()) break;
  }
  return {};
}

// Creates, writes one byte to, closes and removes a file of a name no other
// process or call uses; 0 or the errno of the step that failed.
int probe_write(const fs::path& dir) {
  static std::atomic<uint64_t> calls{0};
  const fs::path probe = dir / fmt::format(".zerodp-write-probe-{}-{}", ::getpid(), calls++);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const char byte = 0;
  int error = ::write(fd, &byte, 1) == 1 ? 0 : errno;
  if (::fsync(fd) != 0 && error == 0) error = errno;  // a full disk may only say so here
  if (::close(fd) != 0 && error == 0) error = errno;
  if (::unlink(probe.c_str()) != 0 && error == 0) error = errno;
  return error;
}

}  // namespace

uint64_t filesystem_free_bytes(const fs::path& dir) {
  struct statvfs st {};
  ZDP_CHECK(::statvfs(dir.c_str(), &st) == 0, IoError, "[preflight] cannot read the free space of {} ({})",
            dir.string(), errno_text(errno));
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

namespace {

// check_writable_folder with the message's subject given: "[train] --save
// DIR", or a file's "[train] --metrics FILE (in DIR)".
void check_folder(const fs::path& dir, const std::string& subject) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    ZDP_CHECK(fs::is_directory(status), ConfigError, "{}: is a file, not a folder; give a folder (or a new name)",
              subject);
  } else {
    const fs::path found = existing_ancestor(dir.parent_path());
    ZDP_CHECK(found.empty() || fs::is_directory(found, ec), ConfigError,
              "{}: {} is a file, not a folder (Not a directory); give a path under a folder", subject, found.string());
    // A folder made here stays: the run would make it anyway.
    fs::create_directories(dir, ec);
    ZDP_CHECK(!ec, ConfigError, "{}: cannot create the folder ({}); give a folder this process can write", subject,
              ec.message());
  }
  const int error = probe_write(dir);
  ZDP_CHECK(error == 0, ConfigError, "{}: cannot write in this folder ({}); {} or give a folder this process can write",
            subject, errno_text(error), error == ENOSPC || error == EDQUOT ? "free space there" : "make it writable");
}

}  // namespace

void check_writable_folder(const fs::path& dir, std::string_view what) {
  const fs::path shown = dir.empty() ? fs::path(".") : dir;
  check_folder(shown, fmt::format("{} {}", what, shown.string()));
}

void check_writable_file(const fs::path& path, std::string_view what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    check_folder(dir, fmt::format("{} {} (in {})", what, path.string(), dir.string()));
    return;
  }
  ZDP_CHECK(!fs::is_directory(status), ConfigError, "{} {}: is a folder, not a file; give a file name", what,
            path.string());
  // Opened for appending, without creating or truncating: a check changes nothing in it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  const int error = fd < 0 ? errno : 0;
  if (fd >= 0) (void)::close(fd);
  ZDP_CHECK(error == 0, ConfigError, "{} {}: cannot write this file ({}); make it writable or give another path", what,
            path.string(), errno_text(error));
}

void check_save_folder(const fs::path& dir, uint64_t checkpoint_bytes, std::string_view what,
                       const FreeBytes& free_bytes) {
  check_writable_folder(dir, what);
  const uint64_t need = checkpoint_bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * checkpoint_bytes;
  const uint64_t free = free_bytes(dir);
  ZDP_CHECK(free >= need, ConfigError,
            "{} {}: its filesystem has {} free, but two checkpoints of this run need {} ({} each, the next one is "
            "written before the last is removed); free space there or give a folder on a larger filesystem",
            what, dir.string(), bytes_text(free), bytes_text(need), bytes_text(checkpoint_bytes));
}

void check_train_outputs(const TrainConfig& config, const model::ModelConfig& model, const FreeBytes& free_bytes) {
  const std::optional<comm::MpiLaunch> launch =
      config.backend == comm::Backend::kMpi ? comm::mpi_launch() : std::nullopt;
  if (!config.save_dir.empty()) {
    // The ranks a checkpoint is saved by: the shard group's with hybrid sharding.
    int ranks = config.ranks > 0 ? config.ranks : (launch ? launch->processes : 1);
    if (config.engine.shard_group_size > 0) ranks = std::min(ranks, config.engine.shard_group_size);
    check_save_folder(config.save_dir, plan::checkpoint_bytes(model, config.engine.optimizer, ranks), "[train] --save",
                      free_bytes);
  }
  // Only rank 0 writes the metrics: under MPI, its process checks them.
  if (!config.metrics_path.empty() && (!launch || launch->rank == 0)) {
    check_writable_file(config.metrics_path, "[train] --metrics");
  }
}

}  // namespace zerodp::train
