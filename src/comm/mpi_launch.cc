// SPDX-License-Identifier: Apache-2.0
// What mpirun tells a process through its environment (mpi.h). Built in
// every configuration: a build without MPI still recognises the launch, to
// say that it cannot join it.
#include <fmt/format.h>

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

// The tasks Slurm placed on node `node` (SLURM_NODEID) of the step, from
// SLURM_STEP_TASKS_PER_NODE: counts in node order, a run of k nodes with c
// tasks each written "c(xk)", e.g. "2(x3),1". 0 when it is not set or does
// not reach that node; ConfigError naming a malformed list.
int slurm_tasks_on_node(int node) {
  const char* value = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (value == nullptr || node < 0) return 0;
  const std::string_view list(value);
  const char* p = list.data();
  const char* const end = p + list.size();
  auto expect = [&](bool ok) {
    ZDP_CHECK(ok, ConfigError,
              "[mpi] SLURM_STEP_TASKS_PER_NODE='{}' is not a list of task counts such as 2(x3),1; start zerodp "
              "with srun -n N, or unset it",
              list);
  };
  auto count = [&] {
    int n = 0;
    const auto [next, error] = std::from_chars(p, end, n);
    expect(error == std::errc() && n >= 1);
    p = next;
    return n;
  };
  auto take = [&](char c) {
    expect(p < end && *p == c);
    ++p;
  };
  for (int first = 0; p < end;) {  // first: the first node of the current run
    const int tasks = count();
    int nodes = 1;
    if (p < end && *p == '(') {
      take('(');
      take('x');
      nodes = count();
      take(')');
    }
    if (node < first + nodes) return tasks;
    first += nodes;
    if (p < end) take(',');
  }
  return 0;
}

std::optional<MpiLaunch> slurm_launch() {
  const int processes = process_count({"SLURM_STEP_NUM_TASKS"});
  if (processes <= 1) return std::nullopt;
  const int node = launch_number({"SLURM_NODEID"}, 0, "node index");
  return MpiLaunch{.launcher = Launcher::kSrun,
                   .processes = processes,
                   .processes_on_host = std::max(1, slurm_tasks_on_node(node)),
                   .rank = std::max(0, launch_number({"SLURM_PROCID"}, 0, "process rank"))};
}

}  // namespace

std::optional<MpiLaunch> mpi_launch() {
  std::optional<MpiLaunch> launch;
  if (const int processes = process_count({"OMPI_COMM_WORLD_SIZE"}); processes > 0) {
    launch = MpiLaunch{.launcher = Launcher::kMpirun,
                       .processes = processes,
                       .processes_on_host = std::max(1, process_count({"OMPI_COMM_WORLD_LOCAL_SIZE"})),
                       .rank = std::max(0, launch_number({"OMPI_COMM_WORLD_RANK"}, 0, "process rank"))};
  } else if ((launch = slurm_launch())) {
  } else if (const int pmi = process_count({"PMI_SIZE"}); pmi > 0) {
    launch = MpiLaunch{.launcher = Launcher::kPmi,
                       .processes = pmi,
                       .processes_on_host = std::max(1, process_count({"MPI_LOCALNRANKS"})),
                       .rank = std::max(0, launch_number({"PMI_RANK"}, 0, "process rank"))};
  } else {
    return std::nullopt;
  }
  ZDP_CHECK(launch->rank < launch->processes, ConfigError, "[mpi] process rank {} is not below the job's {} processes",
            launch->rank, launch->processes);
  return launch;
}

std::string launch_command(Launcher launcher, int processes) {
  switch (launcher) {
    case Launcher::kSrun:
      return fmt::format("srun -n {}", processes);
    case Launcher::kPmi:
      return fmt::format("mpiexec -n {}", processes);
    case Launcher::kMpirun:
      break;
  }
  return fmt::format("mpirun -np {}", processes);
}

bool mpi_launched() { return mpi_launch().has_value(); }

}  // namespace zerodp::comm
