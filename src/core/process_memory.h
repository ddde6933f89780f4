// SPDX-License-Identifier: Apache-2.0
// What the operating system says about this process's memory and the
// machine's: resident set size now and at its high-water mark (Linux
// /proc/self/status VmRSS and VmHWM), and the machine's physical memory.
// zerodp's ledger counts what the engine allocates; these count everything
// (binary, libraries, OpenBLAS and MPI buffers, the allocator's slack), so
// the run's summary can set the measured peak next to the plan.
// Returns 0 where the system does not tell (not Linux).
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cstdint>

namespace zerodp {

// Large allocations (256 KiB and up) go straight to the operating system and
// back when freed (glibc: a fixed mmap threshold). By default glibc raises
// the threshold after the first large free and keeps later ones in its
// arenas, so a step's transient buffers stay resident after the step and
// the process grows past what the ledger holds. No-op elsewhere.
void return_large_frees_to_the_os();

uint64_t current_rss_bytes();
uint64_t peak_rss_bytes();
// Physical memory of the machine (MemTotal).
uint64_t machine_memory_bytes();
// The memory limit of this process's cgroup (a container's, a scheduler's
// job), 0 when none is set: cgroup v2's memory.max, else v1's
// memory.limit_in_bytes (a value of 2^62 or more means none). The paths
// are parameters for tests.
uint64_t cgroup_memory_limit_bytes(const char* v2_max = "/sys/fs/cgroup/memory.max",
                                   const char* v1_limit = "/sys/fs/cgroup/memory/memory.limit_in_bytes");

}  // namespace zerodp
