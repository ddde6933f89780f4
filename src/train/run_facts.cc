// SPDX-License-Identifier: Apache-2.0
#include "train/run_facts.h"

#include <fmt/format.h>

#include "comm/mpi.h"
#include "core/build_info.h"
#include "core/simd.h"
#include "kernels/gemm.h"

namespace zerodp::train {

std::vector<std::pair<std::string, std::string>> run_facts() {
  const BuildInfo& b = build_info();
  const kernels::BlasInfo blas = kernels::blas_info();
  const std::string mpi = comm::mpi_library_version();
  return {
      {"version", b.version},
      {"commit", b.commit},
      {"compiler", b.compiler},
      {"build", b.build},
      {"simd", fmt::format("{} (best on this CPU: {})", simd_level_name(active_simd_level()),
                           simd_level_name(best_simd_level()))},
      {"cpu", cpu_model_name()},
      {"openblas", blas.coretype_env.empty()
                       ? fmt::format("{} (core {})", blas.config, blas.core)
                       : fmt::format("{} (core {}; OPENBLAS_CORETYPE={})", blas.config, blas.core, blas.coretype_env)},
      {"mpi", mpi.empty() ? std::string("none (built without MPI)") : mpi},
  };
}

}  // namespace zerodp::train
