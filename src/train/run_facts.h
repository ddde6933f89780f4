// SPDX-License-Identifier: Apache-2.0
// The facts that reproduce a run on another machine, in one list: zerodp's
// version and commit, the compiler and build kind, the SIMD level chosen at
// run time (and the best this CPU runs), the CPU's model name, OpenBLAS's
// version and core type, and the MPI library. `zerodp --version` prints
// them; the metrics file's config record and every checkpoint manifest
// (metadata "build.*") record the same.
// Thread-safety: safe to call from any thread (reads process-wide state).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace zerodp::train {

// (name, value) in print order: version, commit, compiler, build, simd,
// cpu, openblas, mpi.
std::vector<std::pair<std::string, std::string>> run_facts();

}  // namespace zerodp::train
