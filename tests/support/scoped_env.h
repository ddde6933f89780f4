// SPDX-License-Identifier: Apache-2.0
// Sets (or, with nullopt, unsets) one environment variable for a scope and
// restores what it was. Not thread-safe: for tests that run on one thread
// (the variable is read by child processes or by the library under test).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace zerodp::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;  // NOLINT(concurrency-mt-unsafe): one thread
    set(value);
  }
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& value) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the tests run on one thread
    value ? ::setenv(name_, value->c_str(), 1) : ::unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace zerodp::testing
