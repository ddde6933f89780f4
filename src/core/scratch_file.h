// SPDX-License-Identifier: Apache-2.0
// A file of the process's own in a directory the user gave: created new
// (never someone else's file), with O_DIRECT where the file system takes it,
// and gone when the object is. `bench disk` measures through one; the
// offloaded optimizer states (zero/offload_store.h) live in one, unlinked
// as soon as it is open, so that a crash leaves nothing behind.
// Thread-safety: one owner; the descriptor may be used from I/O threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zerodp {

// O_DIRECT's alignment of buffers, offsets and sizes: the logical block of
// every common device.
inline constexpr size_t kDirectAlignment = 4096;

class ScratchFile {
 public:
  enum class Name : uint8_t {
    kKeepUntilClosed,  // the path exists while the object lives
    kUnlinkAtOnce,     // only the descriptor reaches it
  };
  // `dir`/`file_name`; `purpose` names the flag or command for messages
  // ("bench disk", "--offload-optimizer"). ConfigError when it cannot be
  // created (a missing or read-only directory, a name already there).
  ScratchFile(const std::string& dir, std::string_view file_name, std::string_view purpose, Name name);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  int fd() const { return fd_; }
  bool direct() const { return direct_; }  // opened with O_DIRECT
  const std::string& path() const { return path_; }
  // Reserves `bytes` on the disk (posix_fallocate), so that running out of
  // space is an error now, naming the directory and the free space, and not
  // a failed write later.
  void reserve(uint64_t bytes);

 private:
  std::string path_;
  std::string purpose_;
  int fd_ = -1;
  bool direct_ = false;
  bool linked_ = false;
};

// The bytes free for this user in the file system that holds `dir`; ConfigError
// naming `purpose` when it cannot be read.
uint64_t free_bytes(const std::string& dir, std::string_view purpose);

}  // namespace zerodp
