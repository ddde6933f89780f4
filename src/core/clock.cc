// SPDX-License-Identifier: Apache-2.0
#include "core/clock.h"

#include <time.h>

#include <chrono>
#include <fstream>

namespace zerodp {

double clock_seconds(ClockKind kind) {
  if (kind == ClockKind::kThreadCpu) {
    timespec ts{};
    // Cannot fail for the calling thread's clock id on Linux.
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_cpu_seconds(pthread_t thread) {
  clockid_t id{};
  timespec ts{};
  if (pthread_getcpuclockid(thread, &id) != 0 || clock_gettime(id, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double thread_runqueue_seconds() {
  // "<on-cpu ns> <runqueue ns> <timeslices>": a read of a few bytes from
  // procfs, a few microseconds.
  std::ifstream stat("/proc/thread-self/schedstat");
  unsigned long long on_cpu = 0, waiting = 0;
  if (!(stat >> on_cpu >> waiting)) return 0.0;
  return 1e-9 * static_cast<double>(waiting);
}

std::string_view clock_name(ClockKind kind) { return kind == ClockKind::kThreadCpu ? "cpu" : "wall"; }

std::optional<ClockKind> parse_clock_kind(std::string_view name) {
  if (name == "wall") return ClockKind::kWall;
  if (name == "cpu") return ClockKind::kThreadCpu;
  return std::nullopt;
}

}  // namespace zerodp
