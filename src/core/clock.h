// SPDX-License-Identifier: Apache-2.0
// The two clocks a benchmark of one thread can read: the steady wall clock,
// and the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: its user and
// system time, page faults included). On an idle core the two advance
// together; on a shared machine the thread's CPU time leaves out the time
// other processes held the core, so a one-thread rate measured with it does
// not depend on the load (cache and memory-bandwidth contention still do).
// Thread-safety: both are safe from any thread; the CPU clock is per thread,
// so a duration must be read on the thread that started it.
#pragma once

#include <pthread.h>

#include <optional>
#include <string_view>

namespace zerodp {

enum class ClockKind { kWall, kThreadCpu };

// Seconds since an unspecified origin, fixed per clock (and per thread for
// kThreadCpu); differences are durations.
double clock_seconds(ClockKind kind);

// The CPU time of a running thread of this process (pthread_getcpuclockid),
// in seconds since it started; 0 when it cannot be read.
double thread_cpu_seconds(pthread_t thread);

// The time the calling thread has spent ready to run while other threads
// held the cores, in seconds since it started (Linux's
// /proc/thread-self/schedstat, its second field); 0 when the kernel does
// not keep it. A wall duration less the thread's CPU and this is the time
// it was blocked (waiting on a lock, a condition or the network).
double thread_runqueue_seconds();

std::string_view clock_name(ClockKind kind);                       // "wall", "cpu"
std::optional<ClockKind> parse_clock_kind(std::string_view name);  // the names above

}  // namespace zerodp
