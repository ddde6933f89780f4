#include "core/process_memory.h"

#include <fstream>
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
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

uint64_t current_rss_bytes() { return proc_kib_line("/proc/self/status", "VmRSS"); }
uint64_t peak_rss_bytes() { return proc_kib_line("/proc/self/status", "VmHWM"); }
uint64_t machine_memory_bytes() { return proc_kib_line("/proc/meminfo", "MemTotal"); }

}  // namespace zerodp
