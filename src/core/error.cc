// SPDX-License-Identifier: Apache-2.0
#include "core/error.h"

#include <cstdio>
#include <system_error>

namespace zerodp {

void warn(std::string_view message) { fmt::print(stderr, "zerodp: warning: {}\n", message); }

std::string errno_text(int error) { return std::generic_category().message(error); }

namespace detail {

std::string location(const char* file, int line) {
  // Keep the path from src/ on: enough to find the check, free of build paths.
  std::string path(file);
  const auto src = path.rfind("src/");
  if (src != std::string::npos) path = path.substr(src + 4);
  return fmt::format("{}:{}", path, line);
}

}  // namespace detail
}  // namespace zerodp
