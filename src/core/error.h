// SPDX-License-Identifier: Apache-2.0
// The error hierarchy of zerodp and the check macros that throw it.
//
// Every failure is an exception derived from zerodp::Error; nothing aborts the
// process, so a thread rank can fail and report. Messages start with the
// operation in brackets: "[reduce_scatter] count 10 is not divisible by 4".
// The check macros record file:line and, for comparisons, both values.
// Thread-safety: the types are plain values; throwing is thread-safe.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace zerodp {

class Error : public std::runtime_error {
 public:
  // what() is "message (file:line)" when a location is given; message() is
  // the bare sentence, which is what a user-facing one-line error prints.
  explicit Error(const std::string& message, const std::string& location = "")
      : std::runtime_error(location.empty() ? message : message + " (" + location + ")"), message_(message) {}
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// Bad configuration or user input: the CLI maps it to exit code 2.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A collective failed: timeout, a peer that failed, mismatched calls.
class CommError : public Error {
 public:
  using Error::Error;
};

// A file could not be read or written (the operating system refused: a
// directory that cannot be created, a disk that is full, a failed fsync).
class IoError : public Error {
 public:
  using Error::Error;
};

// A file given as input is missing, truncated, corrupt or malformed, or does
// not belong here (bad magic, a checksum mismatch, a shard of another save):
// bad input, which the CLI maps to exit code 2 like ConfigError.
class InputFileError : public IoError {
 public:
  using IoError::IoError;
};

// Tensor shapes or sizes that do not fit together.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// Writes "zerodp: warning: <message>" as one line to stderr: something the
// user should know that does not stop the run (an ignored flag or key).
void warn(std::string_view message);

// The operating system's words for an errno value ("No space left on
// device"), safe to call from any thread (strerror may share one buffer).
std::string errno_text(int error);

namespace detail {
// "file.cc:line" relative to src/; kept out of line of the hot path.
std::string location(const char* file, int line);
}  // namespace detail

}  // namespace zerodp

// ZDP_THROW(ErrorType, "[op] format {}", args...): throws with file:line.
#define ZDP_THROW(ErrorType, ...) \
  throw ErrorType(::fmt::format(__VA_ARGS__), ::zerodp::detail::location(__FILE__, __LINE__))

// ZDP_CHECK(cond, ErrorType, "[op] format {}", args...): throws unless cond.
#define ZDP_CHECK(cond, ErrorType, ...)  \
  do {                                   \
    if (!(cond)) [[unlikely]] {          \
      ZDP_THROW(ErrorType, __VA_ARGS__); \
    }                                    \
  } while (0)

// ZDP_CHECK_OP(a, op, b, ErrorType, "[op] what"): throws unless (a op b),
// naming both values: "[op] what: expected a == b, got 3 vs 4 (file:line)".
#define ZDP_CHECK_OP(a, op, b, ErrorType, what)                                                       \
  do {                                                                                                \
    const auto& zdp_a_ = (a);                                                                         \
    const auto& zdp_b_ = (b);                                                                         \
    if (!(zdp_a_ op zdp_b_)) [[unlikely]] {                                                           \
      ZDP_THROW(ErrorType, "{}: expected {} {} {}, got {} vs {}", what, #a, #op, #b, zdp_a_, zdp_b_); \
    }                                                                                                 \
  } while (0)

#define ZDP_CHECK_EQ(a, b, ErrorType, what) ZDP_CHECK_OP(a, ==, b, ErrorType, what)
#define ZDP_CHECK_LE(a, b, ErrorType, what) ZDP_CHECK_OP(a, <=, b, ErrorType, what)
#define ZDP_CHECK_LT(a, b, ErrorType, what) ZDP_CHECK_OP(a, <, b, ErrorType, what)
