// SPDX-License-Identifier: Apache-2.0
// The scalar level's model loops (model_loops.h compiled for the build's
// baseline target) and the choice of a level's set.
#include "kernels/model_kernels.h"

#include "kernels/model_loops.h"

namespace zerodp::kernels {

const ModelKernelSet kScalarModelKernels = kGenericModelKernels;

const ModelKernelSet& model_kernel_set(SimdLevel level) {
  return *by_level<const ModelKernelSet*>(level, {
    {SimdLevel::kScalar, &kScalarModelKernels},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, &kAvx2ModelKernels}, {SimdLevel::kAvx512, &kAvx512ModelKernels},
#endif
  });
}

}  // namespace zerodp::kernels
