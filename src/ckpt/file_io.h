// SPDX-License-Identifier: Apache-2.0
// Small POSIX file helpers for checkpoints: an owning file descriptor with
// exact positional reads and writes, fsync of files and directories, and the
// crash-safe "write a temporary, fsync, rename, fsync the directory" step.
//
// Every failure throws IoError "[op] <path>: <what> (<strerror>)"; a short
// read (the file is shorter than asked) is an IoError too, never a partial
// result. Thread-safety: a File is used by one thread; distinct files are
// independent. Paths are plain strings (std::filesystem for directories).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace zerodp::ckpt {

class File {
 public:
  // kCreate: write-only, created or truncated. kShared: write-only, created
  // if missing and never truncated, for writers that each write their own
  // byte range of one file (a shard file's parts, checkpoint.h).
  enum class Mode { kRead, kCreate, kShared };

  File() = default;
  // Throws IoError (kRead of a missing file says "missing").
  File(const std::string& path, Mode mode);
  ~File();
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  uint64_t size() const;

  // Reads exactly out.size() bytes at `offset`; IoError when the file ends
  // before (the message names the offset and the file size).
  void read_at(uint64_t offset, std::span<std::byte> out) const;
  // Appends at the current position: the end of what was written (files
  // opened for writing).
  void append(std::span<const std::byte> data);
  // Moves the position append writes at.
  void seek(uint64_t offset);
  // Writes exactly data.size() bytes at `offset` (files opened for writing);
  // the position append uses does not move.
  void write_at(uint64_t offset, std::span<const std::byte> data);
  void sync();
  void close();

 private:
  int fd_ = -1;
  std::string path_;
};

// fsync a directory so that renames and creations inside it are durable.
void sync_directory(const std::string& dir);
// rename(2) with an IoError naming both paths.
void rename_path(const std::string& from, const std::string& to);
// Writes `data` to path + ".tmp", fsyncs it, renames it over `path` and
// fsyncs the parent directory: afterwards `path` holds either the old or the
// new contents, never a mix.
void write_file_atomically(const std::string& path, std::string_view data);
// The whole file as bytes (IoError when missing or unreadable).
std::string read_small_file(const std::string& path, size_t max_bytes);

// dir + "/" + name.
std::string join_path(const std::string& dir, const std::string& name);
std::string parent_path(const std::string& path);

}  // namespace zerodp::ckpt
