// SPDX-License-Identifier: Apache-2.0
// The scalar level's optimizer loops (optim_loops.h compiled for the
// build's baseline target) and the choice of a level's set.
#include "optim/optim_kernels.h"

#include "optim/optim_loops.h"

namespace zerodp::optim::kernels {

const KernelSet kScalarKernels = kGenericKernels;

const KernelSet& kernel_set(SimdLevel level) {
  return *by_level<const KernelSet*>(level, {
    {SimdLevel::kScalar, &kScalarKernels},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, &kAvx2Kernels}, {SimdLevel::kAvx512, &kAvx512Kernels},
#endif
  });
}

}  // namespace zerodp::optim::kernels
