// SPDX-License-Identifier: Apache-2.0
// What mpirun tells a process through its environment (mpi.h). Built in
// every configuration: a build without MPI still recognises the launch, to
// say that it cannot join it.
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "comm/mpi.h"
#include "core/error.h"

namespace zerodp::comm {
namespace {

// The value of the first of `names` that is set, as a process count; 0 when
// none is set. A value that is not a positive count is refused, naming it.
int process_count(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int count = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    ZDP_CHECK(error == std::errc() && end == text.data() + text.size() && count >= 1, ConfigError,
              "[mpi] {}='{}' is not a process count; start zerodp with mpirun -np N, or unset it", name, text);
    return count;
  }
  return 0;
}

}  // namespace

std::optional<MpiLaunch> mpi_launch() {
  const int processes = process_count({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (processes == 0) return std::nullopt;
  const int on_host = process_count({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
  return MpiLaunch{.processes = processes, .processes_on_host = on_host > 0 ? on_host : 1};
}

bool mpi_launched() { return mpi_launch().has_value(); }

}  // namespace zerodp::comm
