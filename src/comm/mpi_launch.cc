// SPDX-License-Identifier: Apache-2.0
// What mpirun tells a process through its environment (mpi.h). Built in
// every configuration: a build without MPI still recognises the launch, to
// say that it cannot join it.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "comm/mpi.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// The value of the first of `names` that is set, as a number at least
// `least`; -1 when none is set. Any other value is refused, naming it.
int launch_number(std::initializer_list<const char*> names, int least, const char* what) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    ZDP_CHECK(error == std::errc() && end == text.data() + text.size() && number >= least, ConfigError,
              "[mpi] {}='{}' is not a {}; start zerodp with mpirun -np N, or unset it", name, text, what);
    return number;
  }
  return -1;
}

int process_count(std::initializer_list<const char*> names) {
  return std::max(0, launch_number(names, 1, "process count"));
}

}  // namespace

std::optional<MpiLaunch> mpi_launch() {
  const int processes = process_count({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (processes == 0) return std::nullopt;
  const int on_host = process_count({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
  const int rank = launch_number({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0, "process rank");
  ZDP_CHECK(rank < processes, ConfigError, "[mpi] process rank {} is not below the job's {} processes", rank,
            processes);
  return MpiLaunch{.processes = processes, .processes_on_host = on_host > 0 ? on_host : 1, .rank = std::max(0, rank)};
}

bool mpi_launched() { return mpi_launch().has_value(); }

}  // namespace zerodp::comm
