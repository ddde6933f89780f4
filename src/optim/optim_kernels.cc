// SPDX-License-Identifier: Apache-2.0
// The scalar level's optimizer loops (optim_loops.h compiled for the
// build's baseline target) and the choice of a level's set.
#include "optim/optim_kernels.h"

#include "optim/optim_loops.h"

namespace zerodp::optim::kernels {

const KernelSet kScalarKernels = kGenericKernels;

const KernelSet& kernel_set(SimdLevel level) {
  switch (level) {
#if ZERODP_SIMD_X86_64
    case SimdLevel::kAvx512:
      return kAvx512Kernels;
    case SimdLevel::kAvx2:
      return kAvx2Kernels;
#endif
    default:
      return kScalarKernels;
  }
}

}  // namespace zerodp::optim::kernels
