// SPDX-License-Identifier: Apache-2.0
#include "core/async_io.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"

#if ZERODP_HAVE_LIBURING
#include <liburing.h>
#endif

namespace zerodp {
namespace {

// A transfer larger than this is refused: the caller splits it (io_uring's length is 32-bit, and
// pread/pwrite move at most 0x7ffff000 bytes at once on Linux).
constexpr size_t kMaxTransfer = size_t{1} << 30;

struct Request {
  bool write = false;
  int fd = -1;
  char* buffer = nullptr;
  size_t bytes = 0;
  uint64_t offset = 0;
  size_t done = 0;  // bytes moved so far: a short transfer goes on from here
  std::string name = {};
  bool finished = false;
  std::string error = {};  // why it failed; empty when it did not

  // Records a transfer's result: `moved` bytes, or -errno. True when the
  // request is over (done, or failed); the caller then sets `finished`
  // where the owner reads it (the threads: under their lock).
  bool advance(ssize_t moved) {
    if (moved < 0) {
      error = errno_text(static_cast<int>(-moved));
    } else if (moved == 0) {
      error = write ? "the device took no bytes" : "the file ends before it";
    } else {
      done += static_cast<size_t>(moved);
    }
    return !error.empty() || done == bytes;
  }
  [[noreturn]] void fail() const {
    ZDP_THROW(IoError, "[io] {} of {} bytes at offset {} of {} failed after {} bytes: {} (check the file's disk)",
              write ? "write" : "read", bytes, offset, name, done, error);
  }
};

}  // namespace

class AsyncIo::Backend {
 public:
  explicit Backend(int depth) : depth_(depth) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual IoBackend kind() const = 0;

  Ticket submit(Request request) {
    ZDP_CHECK(request.bytes <= kMaxTransfer, IoError, "[io] a {} of {} bytes is over the {} a request moves: split it",
              request.write ? "write" : "read", request.bytes, kMaxTransfer);
    const Ticket t = next_++;
    auto owned = std::make_unique<Request>(std::move(request));
    Request* r = owned.get();
    if (r->bytes == 0) r->finished = true;
    requests_.emplace(t, std::move(owned));
    if (!r->finished) start(r);
    return t;
  }
  void wait(Ticket t) {
    const auto it = requests_.find(t);
    ZDP_CHECK(it != requests_.end(), IoError, "[io] request {} is not pending (waited for twice?)", t);
    std::unique_ptr<Request> r = std::move(it->second);
    requests_.erase(it);
    finish(r.get());
    if (!r->error.empty()) r->fail();
  }
  size_t pending() const { return requests_.size(); }
  std::vector<Ticket> tickets() const {
    std::vector<Ticket> out;
    for (const auto& [t, r] : requests_) out.push_back(t);
    return out;
  }
  int depth() const { return depth_; }
  std::string fallback_reason;

 protected:
  // Starts the request (blocking while `depth` are in flight).
  virtual void start(Request* r) = 0;
  // Returns once `r` has finished.
  virtual void finish(Request* r) = 0;

 private:
  int depth_;
  Ticket next_ = 1;
  std::unordered_map<Ticket, std::unique_ptr<Request>> requests_;
};

namespace {

// pread/pwrite on worker threads: min(depth, 4) of them, each request whole
// on one thread.
class ThreadBackend final : public AsyncIo::Backend {
 public:
  explicit ThreadBackend(int depth) : Backend(depth) {
    const int workers = std::min(depth, 4);
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadBackend() override {
    {
      const std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  ThreadBackend(const ThreadBackend&) = delete;
  ThreadBackend& operator=(const ThreadBackend&) = delete;
  IoBackend kind() const override { return IoBackend::kThreads; }

 protected:
  void start(Request* r) override {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return in_flight_ < depth(); });
    ++in_flight_;
    queue_.push_back(r);
    lock.unlock();
    work_cv_.notify_one();
  }
  void finish(Request* r) override {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return r->finished; });
  }

 private:
  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      Request* r = queue_.front();
      queue_.pop_front();
      lock.unlock();
      bool over = false;
      while (!over) {
        const size_t left = r->bytes - r->done;
        const auto at = static_cast<off_t>(r->offset + r->done);
        ssize_t moved =
            r->write ? ::pwrite(r->fd, r->buffer + r->done, left, at) : ::pread(r->fd, r->buffer + r->done, left, at);
        if (moved < 0 && errno == EINTR) continue;
        if (moved < 0) moved = -errno;
        over = r->advance(moved);
      }
      lock.lock();
      r->finished = true;
      --in_flight_;
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Request*> queue_;
  int in_flight_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

#if ZERODP_HAVE_LIBURING
// One ring of `depth` entries; the owner thread submits and reaps.
class UringBackend final : public AsyncIo::Backend {
 public:
  // -errno of io_uring_queue_init, or 0.
  static int try_init(int depth, io_uring& ring) { return io_uring_queue_init(static_cast<unsigned>(depth), &ring, 0); }
  UringBackend(int depth, const io_uring& ring) : Backend(depth), ring_(ring) {}
  ~UringBackend() override {
    // The kernel must not write into freed buffers: every request finishes
    // first. A ring that fails here is torn down anyway (the kernel then
    // cancels what it still holds).
    try {
      while (in_flight_ > 0) reap_one();
    } catch (const IoError&) {  // NOLINT(bugprone-empty-catch): nothing left to tell
    }
    io_uring_queue_exit(&ring_);
  }
  UringBackend(const UringBackend&) = delete;
  UringBackend& operator=(const UringBackend&) = delete;
  IoBackend kind() const override { return IoBackend::kUring; }

 protected:
  void start(Request* r) override {
    while (in_flight_ >= depth()) reap_one();
    ++in_flight_;
    queue(r);
  }
  void finish(Request* r) override {
    while (!r->finished) reap_one();
  }

 private:
  void queue(Request* r) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    // Never null: at most `depth` requests are in flight, each submitted at once.
    ZDP_CHECK(sqe != nullptr, IoError, "[io] io_uring submission queue full");
    const size_t left = r->bytes - r->done;
    if (r->write) {
      io_uring_prep_write(sqe, r->fd, r->buffer + r->done, static_cast<unsigned>(left), r->offset + r->done);
    } else {
      io_uring_prep_read(sqe, r->fd, r->buffer + r->done, static_cast<unsigned>(left), r->offset + r->done);
    }
    io_uring_sqe_set_data(sqe, r);
    int submitted = 0;
    do {
      submitted = io_uring_submit(&ring_);
    } while (submitted == -EINTR);
    ZDP_CHECK(submitted >= 0, IoError, "[io] io_uring_submit failed: {}", errno_text(-submitted));
  }
  void reap_one() {
    io_uring_cqe* cqe = nullptr;
    int got = 0;
    do {
      got = io_uring_wait_cqe(&ring_, &cqe);
    } while (got == -EINTR);
    ZDP_CHECK(got == 0, IoError, "[io] io_uring_wait_cqe failed: {}", errno_text(-got));
    auto* r = static_cast<Request*>(io_uring_cqe_get_data(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (r->advance(res)) {
      r->finished = true;
      --in_flight_;
    } else {
      queue(r);  // a short transfer: the rest, still in flight
    }
  }

  io_uring ring_;
  int in_flight_ = 0;
};
#endif

}  // namespace

std::string_view io_backend_name(IoBackend backend) { return backend == IoBackend::kUring ? "io_uring" : "threads"; }

AsyncIo::AsyncIo(int depth, IoBackend backend) {
  ZDP_CHECK(depth >= 1 && depth <= 4096, ConfigError, "[io] queue depth {} must be in [1, 4096]", depth);
  const char* forced = std::getenv("ZERODP_IO");  // NOLINT(concurrency-mt-unsafe): read once, before threads
  std::string reason;
  if (forced != nullptr && std::string_view(forced) == "threads") {
    if (backend == IoBackend::kUring) reason = "ZERODP_IO=threads";
    backend = IoBackend::kThreads;
  }
#if ZERODP_HAVE_LIBURING
  if (backend == IoBackend::kUring) {
    io_uring ring{};
    const int rc = UringBackend::try_init(depth, ring);
    if (rc == 0) {
      impl_ = std::make_unique<UringBackend>(depth, ring);
      return;
    }
    reason = fmt::format("the kernel refused a ring: {}", errno_text(-rc));
  }
#else
  if (backend == IoBackend::kUring) reason = "this build has no liburing";
#endif
  impl_ = std::make_unique<ThreadBackend>(depth);
  impl_->fallback_reason = reason;
}

AsyncIo::~AsyncIo() = default;
AsyncIo::AsyncIo(AsyncIo&&) noexcept = default;
AsyncIo& AsyncIo::operator=(AsyncIo&&) noexcept = default;

IoBackend AsyncIo::backend() const { return impl_->kind(); }
const std::string& AsyncIo::fallback_reason() const { return impl_->fallback_reason; }
int AsyncIo::depth() const { return impl_->depth(); }
size_t AsyncIo::pending() const { return impl_->pending(); }

AsyncIo::Ticket AsyncIo::read(int fd, void* buffer, size_t bytes, uint64_t offset, std::string_view name) {
  return impl_->submit({.write = false,
                        .fd = fd,
                        .buffer = static_cast<char*>(buffer),
                        .bytes = bytes,
                        .offset = offset,
                        .name = std::string(name)});
}

AsyncIo::Ticket AsyncIo::write(int fd, const void* buffer, size_t bytes, uint64_t offset, std::string_view name) {
  // The buffer is only read (pwrite's and io_uring's write take const data).
  return impl_->submit({.write = true,
                        .fd = fd,
                        .buffer = const_cast<char*>(static_cast<const char*>(buffer)),  // NOLINT
                        .bytes = bytes,
                        .offset = offset,
                        .name = std::string(name)});
}

void AsyncIo::wait(Ticket ticket) { impl_->wait(ticket); }

void AsyncIo::wait_all() {
  std::vector<Ticket> tickets = impl_->tickets();
  std::sort(tickets.begin(), tickets.end());
  std::exception_ptr first;
  for (const Ticket t : tickets) {
    try {
      wait(t);
    } catch (const IoError&) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace zerodp
