// SPDX-License-Identifier: Apache-2.0
// Reads and writes of whole buffers at file offsets, queued and finished
// while the caller computes: the engine under disk streaming (bench disk
// today; offloaded optimizer states next). Two backends with one meaning:
// io_uring through liburing where the build found it and the kernel allows
// it (io_uring_setup can be off: /proc/sys/kernel/io_uring_disabled, or a
// container's seccomp), else worker threads running pread/pwrite. A short
// transfer is continued until the whole buffer moved; end of file, or the
// operating system's refusal, is an IoError naming the file, the offset and
// the reason.
//
// A request's buffer must stay valid, and unread/unwritten by the caller,
// until its wait() returns. Files opened with O_DIRECT need buffers,
// offsets and sizes aligned to the device's logical block (4096 covers
// every common device; AlignedBuffer's 64 bytes do not).
// Thread-safety: one thread owns an AsyncIo (submits and waits); its
// backend's threads are its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace zerodp {

enum class IoBackend : uint8_t { kUring, kThreads };
std::string_view io_backend_name(IoBackend backend);  // "io_uring", "threads"

class AsyncIo {
 public:
  using Ticket = uint64_t;

  // Up to `depth` requests in flight (at least 1). `backend`: the one
  // preferred; io_uring falls back to threads when the build lacks liburing
  // or the kernel refuses a ring (fallback_reason() says which). The
  // environment's ZERODP_IO=threads forces threads (tests run both).
  explicit AsyncIo(int depth = 8, IoBackend backend = IoBackend::kUring);
  ~AsyncIo();
  AsyncIo(const AsyncIo&) = delete;
  AsyncIo& operator=(const AsyncIo&) = delete;
  AsyncIo(AsyncIo&&) noexcept;
  AsyncIo& operator=(AsyncIo&&) noexcept;

  IoBackend backend() const;
  // Why io_uring was not used ("" when it is, or was not asked for).
  const std::string& fallback_reason() const;
  int depth() const;

  // Queue a transfer of `bytes` between `buffer` and `fd` at `offset`;
  // `name` (the file's path) is for messages. Blocks while `depth` requests
  // are in flight, until one finishes (its result kept for its wait()).
  Ticket read(int fd, void* buffer, size_t bytes, uint64_t offset, std::string_view name);
  Ticket write(int fd, const void* buffer, size_t bytes, uint64_t offset, std::string_view name);
  // Blocks until the request finished; IoError when it failed. Each ticket
  // is waited for once.
  void wait(Ticket ticket);
  // Waits for every request in flight; the first failure is thrown after
  // all have finished.
  void wait_all();
  // Requests submitted and not yet waited for.
  size_t pending() const;

  class Backend;  // io_uring's or the threads' (async_io.cc)

 private:
  std::unique_ptr<Backend> impl_;
};

}  // namespace zerodp
