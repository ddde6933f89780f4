// SPDX-License-Identifier: Apache-2.0
#include "core/process_memory.h"

#include <fstream>
#include <stdexcept>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string>

namespace zerodp {
namespace {

// A "Key:   1234 kB" line of a /proc file, in bytes (0 when absent).
uint64_t proc_kib_line(const char* file, const char* key) {
  std::ifstream in(file);
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

}  // namespace

void return_large_frees_to_the_os() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);  // NOLINT(concurrency-mt-unsafe): at start, before any thread
#endif
}

uint64_t current_rss_bytes() { return proc_kib_line("/proc/self/status", "VmRSS"); }
uint64_t peak_rss_bytes() { return proc_kib_line("/proc/self/status", "VmHWM"); }
uint64_t machine_memory_bytes() { return proc_kib_line("/proc/meminfo", "MemTotal"); }

uint64_t cgroup_memory_limit_bytes(const char* v2_max, const char* v1_limit) {
  for (const char* path : {v2_max, v1_limit}) {
    std::ifstream in(path);
    std::string value;
    if (!(in >> value) || value == "max") continue;
    try {
      const uint64_t bytes = std::stoull(value);
      if (bytes > 0 && bytes < (uint64_t{1} << 62)) return bytes;  // v1 writes ~2^63 for "no limit"
    } catch (const std::exception&) {                              // not a number: no limit we can read
    }
  }
  return 0;
}

}  // namespace zerodp
