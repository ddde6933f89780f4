// SPDX-License-Identifier: Apache-2.0
// What this binary is, for bug reports and for the records a run writes:
// the version (CMake's project version, the one place it is written), the
// git commit it was built from (at configure time; "+dirty" with local
// changes; "unknown" outside a git checkout), the compiler, the build type
// and whether it is a native (-march=native) or portable build, with any
// sanitizer; and the CPU's model name from /proc/cpuinfo.
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace zerodp {

struct BuildInfo {
  std::string version;   // "0.1.0"
  std::string commit;    // "4785fdf", "4785fdf+dirty" or "unknown"
  std::string compiler;  // "GNU 12.2.0"
  std::string build;     // "Release, native (-march=native)" / "Release, portable" (+ ", sanitizers: thread")
};
const BuildInfo& build_info();

// "Intel(R) Xeon(R) Platinum 8488C" ("model name"), or on ARM the
// implementer/part codes; "unknown" when /proc/cpuinfo says nothing.
std::string cpu_model_name();

}  // namespace zerodp
