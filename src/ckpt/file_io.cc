// SPDX-License-Identifier: Apache-2.0
#include "ckpt/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/error.h"

namespace zerodp::ckpt {

File::File(const std::string& path, Mode mode) : path_(path) {
  const int flags = mode == Mode::kRead     ? O_RDONLY | O_CLOEXEC
                    : mode == Mode::kShared ? O_WRONLY | O_CREAT | O_CLOEXEC
                                            : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (mode == Mode::kRead) {
      ZDP_CHECK(err != ENOENT, InputFileError, "[ckpt] {}: the file is missing", path);
      ZDP_THROW(InputFileError, "[ckpt] {}: cannot open for reading ({})", path, errno_text(err));
    }
    ZDP_THROW(IoError, "[ckpt] {}: cannot open for writing ({})", path, errno_text(err));
  }
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File::File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

uint64_t File::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) ZDP_THROW(IoError, "[ckpt] {}: cannot stat ({})", path_, errno_text(errno));
  return static_cast<uint64_t>(st.st_size);
}

void File::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      ZDP_THROW(IoError, "[ckpt] {}: read of {} bytes at offset {} failed ({})", path_, out.size(), offset,
                errno_text(errno));
    }
    ZDP_CHECK(n > 0, InputFileError,
              "[ckpt] {}: the file ends at {} bytes, before the {} bytes needed at offset {}: it is "
              "truncated",
              path_, size(), out.size(), offset);
    done += static_cast<size_t>(n);
  }
}

void File::append(std::span<const std::byte> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ZDP_THROW(IoError, "[ckpt] {}: write failed ({})", path_, errno_text(errno));
    }
    done += static_cast<size_t>(n);
  }
}

void File::seek(uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    ZDP_THROW(IoError, "[ckpt] {}: cannot seek to offset {} ({})", path_, offset, errno_text(errno));
  }
}

void File::write_at(uint64_t offset, std::span<const std::byte> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      ZDP_THROW(IoError, "[ckpt] {}: write of {} bytes at offset {} failed ({})", path_, data.size(), offset,
                errno_text(errno));
    }
    done += static_cast<size_t>(n);
  }
}

void File::sync() {
  if (::fsync(fd_) != 0) ZDP_THROW(IoError, "[ckpt] {}: fsync failed ({})", path_, errno_text(errno));
}

void File::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) ZDP_THROW(IoError, "[ckpt] {}: close failed ({})", path_, errno_text(errno));
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) ZDP_THROW(IoError, "[ckpt] {}: cannot open the directory to fsync it ({})", dir, errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems do not support fsync on directories; that is not an error.
  ZDP_CHECK(rc == 0 || err == EINVAL || err == ENOTSUP, IoError, "[ckpt] {}: fsync of the directory failed ({})", dir,
            errno_text(err));
}

void rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    ZDP_THROW(IoError, "[ckpt] cannot rename {} to {} ({})", from, to, errno_text(errno));
  }
}

void write_file_atomically(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  File f(tmp, File::Mode::kCreate);
  f.append(std::as_bytes(std::span(data.data(), data.size())));
  f.sync();
  f.close();
  rename_path(tmp, path);
  sync_directory(parent_path(path));
}

std::string read_small_file(const std::string& path, size_t max_bytes) {
  File f(path, File::Mode::kRead);
  const uint64_t size = f.size();
  ZDP_CHECK(size <= max_bytes, InputFileError, "[ckpt] {}: {} bytes is larger than the {} bytes such a file may have",
            path, size, max_bytes);
  std::string text(size, '\0');
  f.read_at(0, std::as_writable_bytes(std::span(text.data(), text.size())));
  return text;
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string parent_path(const std::string& path) {
  std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

}  // namespace zerodp::ckpt
