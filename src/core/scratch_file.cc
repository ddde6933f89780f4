// SPDX-License-Identifier: Apache-2.0
#include "core/scratch_file.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/error.h"

namespace zerodp {

ScratchFile::ScratchFile(const std::string& dir, std::string_view file_name, std::string_view purpose, Name name)
    : path_((std::filesystem::path(dir) / file_name).string()), purpose_(purpose) {
  fd_ = ::open(path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  direct_ = fd_ >= 0;
  if (fd_ < 0 && errno == EINVAL) {  // the file system refuses O_DIRECT: buffered
    fd_ = ::open(path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  }
  ZDP_CHECK(fd_ >= 0, ConfigError, "[{}] cannot create {}: {} (give a writable directory)", purpose_, path_,
            errno_text(errno));
  linked_ = name == Name::kKeepUntilClosed;
  if (!linked_ && ::unlink(path_.c_str()) != 0) {
    const int err = errno;
    ::close(fd_);  // the destructor does not run for a constructor that throws
    ZDP_THROW(ConfigError, "[{}] cannot unlink {}: {}", purpose_, path_, errno_text(err));
  }
}

ScratchFile::~ScratchFile() {
  ::close(fd_);
  if (linked_) ::unlink(path_.c_str());
}

void ScratchFile::reserve(uint64_t bytes) {
  if (bytes == 0) return;
  const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (err == 0) return;
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  ZDP_CHECK(err != ENOSPC, ConfigError,
            "[{}] {} needs {:.1f} MiB and has {:.1f} MiB free: give a directory with more space", purpose_, dir,
            static_cast<double>(bytes) / (1 << 20), static_cast<double>(free_bytes(dir, purpose_)) / (1 << 20));
  ZDP_CHECK(err == EOPNOTSUPP || err == EINVAL, IoError, "[{}] cannot reserve {} bytes in {}: {}", purpose_, bytes,
            path_, errno_text(err));
  // A file system without fallocate: set the size; a full disk shows at the write.
  ZDP_CHECK(::ftruncate(fd_, static_cast<off_t>(bytes)) == 0, IoError, "[{}] cannot size {} to {} bytes: {}", purpose_,
            path_, bytes, errno_text(errno));
}

uint64_t free_bytes(const std::string& dir, std::string_view purpose) {
  struct statvfs fs {};
  ZDP_CHECK(::statvfs(dir.c_str(), &fs) == 0, ConfigError, "[{}] cannot stat {}: {}", purpose, dir, errno_text(errno));
  return static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
}

}  // namespace zerodp
