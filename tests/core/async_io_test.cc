// SPDX-License-Identifier: Apache-2.0
// core/async_io.h on both backends: what is written is read back, more
// requests than the depth queue behind each other, a transfer past the end
// of the file or on a closed descriptor is an IoError naming the file.
#include "core/async_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/scoped_env.h"
#include "support/scratch_dir.h"

namespace zerodp {
namespace {

class AsyncIoBoth : public ::testing::TestWithParam<IoBackend> {
 protected:
  // The backend the test asks for; io_uring may fall back (a kernel or a
  // build without it), and says why.
  AsyncIo make(int depth) {
    AsyncIo io(depth, GetParam());
    if (GetParam() == IoBackend::kUring && io.backend() != IoBackend::kUring) {
      EXPECT_FALSE(io.fallback_reason().empty());
    }
    return io;
  }
};

TEST_P(AsyncIoBoth, WritesAreReadBackInAnyOrder) {
  const testing::ScratchDir dir("async_io_roundtrip");
  const std::string path = dir / "f.bin";
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  constexpr int kBlocks = 13;               // more than the depth: requests queue
  constexpr size_t kBlock = 3 * 4096 + 17;  // not a page multiple (buffered file)
  std::vector<uint32_t> data(kBlocks * kBlock / 4 + 1);
  std::iota(data.begin(), data.end(), 7u);
  const auto* bytes = reinterpret_cast<const char*>(data.data());
  {
    AsyncIo io = make(4);
    std::vector<AsyncIo::Ticket> tickets;
    for (int b = kBlocks - 1; b >= 0; --b) {  // backwards: offsets, not order, place them
      tickets.push_back(io.write(fd, bytes + b * kBlock, kBlock, b * kBlock, path));
    }
    EXPECT_EQ(io.pending(), size_t{kBlocks});
    io.wait(tickets[3]);
    io.wait_all();
    EXPECT_EQ(io.pending(), 0u);
  }
  std::vector<char> back(kBlocks * kBlock, 0);
  AsyncIo io = make(3);
  std::vector<AsyncIo::Ticket> tickets;
  for (int b = 0; b < kBlocks; ++b) tickets.push_back(io.read(fd, back.data() + b * kBlock, kBlock, b * kBlock, path));
  for (auto it = tickets.rbegin(); it != tickets.rend(); ++it) io.wait(*it);
  EXPECT_EQ(std::string(back.data(), back.size()), std::string(bytes, back.size()));
  // A request of no bytes finishes at once.
  io.wait(io.read(fd, back.data(), 0, 0, path));
  ::close(fd);
}

TEST_P(AsyncIoBoth, PastTheEndAndBadDescriptorsAreIoErrors) {
  const testing::ScratchDir dir("async_io_errors");
  const std::string path = dir / "short.bin";
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  const std::string text(1000, 'x');
  ASSERT_EQ(::pwrite(fd, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  AsyncIo io = make(2);
  std::vector<char> buffer(4096);
  // 1000 bytes there: the read moves them, then finds the end.
  const AsyncIo::Ticket past = io.read(fd, buffer.data(), buffer.size(), 0, path);
  try {
    io.wait(past);
    ADD_FAILURE() << "a read past the end succeeded";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("read of 4096 bytes at offset 0 of " + path + " failed after 1000 bytes: the file ends"),
              std::string::npos)
        << what;
  }
  ::close(fd);
  const AsyncIo::Ticket closed = io.write(fd, text.data(), text.size(), 0, path);
  const AsyncIo::Ticket fine = io.read(-1, buffer.data(), 0, 0, path);  // nothing to move: no error
  EXPECT_THROW(io.wait_all(), IoError);
  EXPECT_EQ(io.pending(), 0u);
  EXPECT_THROW(io.wait(closed), IoError);  // waited for already
  EXPECT_THROW(io.wait(fine), IoError);
  EXPECT_THROW(AsyncIo(0), ConfigError);
}

INSTANTIATE_TEST_SUITE_P(Backends, AsyncIoBoth, ::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                         [](const auto& info) {
                           return std::string(io_backend_name(info.param)) == "io_uring" ? std::string("uring")
                                                                                         : std::string("threads");
                         });

// ZERODP_IO=threads forces the threads, and says so.
TEST(AsyncIo, EnvironmentForcesThreads) {
  const testing::ScopedEnv env("ZERODP_IO", "threads");
  const AsyncIo io(2);
  EXPECT_EQ(io.backend(), IoBackend::kThreads);
  EXPECT_EQ(io.fallback_reason(), "ZERODP_IO=threads");
}

}  // namespace
}  // namespace zerodp
